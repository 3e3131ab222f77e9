// Renders /openapi.json, served by the same gateway: every asset comes from
// this origin, none from a CDN (the page's Content-Security-Policy says so).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#reference",
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    // Swagger UI would otherwise ask validator.swagger.io about the document.
    validatorUrl: null,
  });
});
