// Renders /openapi.json, served by the same gateway: every asset comes from
// this origin, none from a CDN (the page's Content-Security-Policy says so).
// The document is shown for this page, not changed on the server:
// - "Try it out" calls the listener the page was opened from (the public
//   listener answers no /bo route; the admin listener answers both);
// - example values of parameters are shown as examples, never put in the
//   inputs, so nothing is sent that the reader did not type;
// - the long introduction is folded, so the first operation is on the
//   first screen.
"use strict";

function introduction(spec) {
  var admin = window.location.port === "8080" ? window.location.origin.replace(/:8080$/, ":8090") + "/docs" : "";
  var lines = [
    "Calls made with **Try it out** go to this listener, **" + window.location.origin + "**. " +
      "The public listener answers `/public/**`; the admin listener answers `/bo/**` and everything public" +
      (admin ? " (open this page there: [" + admin + "](" + admin + "))" : "") +
      ". Authorize `/bo` calls with a back-office token (`make dev`: `dev-token`, `dev-viewer-token`).",
    "Guides: the mobile app and integrations, editors, platform, contributors (`docs/` in the repository). " +
      "The document itself: [/openapi.yaml](/openapi.yaml), [/openapi.json](/openapi.json).",
    "<details><summary>Conventions, caching, errors, limits: the whole introduction</summary>\n\n" +
      (spec.info.description || "") + "\n\n</details>",
  ];
  return lines.join("\n\n");
}

// exampleAsText moves a parameter's example values into its description.
function exampleAsText(p) {
  if (!p || typeof p !== "object") {
    return;
  }
  var shown = [];
  if (p.example !== undefined) {
    shown.push(p.example);
    delete p.example;
  }
  if (p.examples && typeof p.examples === "object") {
    Object.keys(p.examples).forEach(function (k) {
      var e = p.examples[k];
      shown.push(e && e.value !== undefined ? e.value : e);
    });
    delete p.examples;
  }
  if (p.schema && typeof p.schema === "object") {
    if (p.schema.example !== undefined) {
      shown.push(p.schema.example);
      delete p.schema.example;
    }
    if (Array.isArray(p.schema.examples)) {
      shown = shown.concat(p.schema.examples);
      delete p.schema.examples;
    }
  }
  if (shown.length > 0) {
    var text = shown.map(function (v) { return "`" + (typeof v === "string" ? v : JSON.stringify(v)) + "`"; }).join(", ");
    p.description = (p.description ? p.description + "\n\n" : "") + "Example: " + text;
  }
}

function forThisPage(spec) {
  var here = window.location.origin;
  spec.servers = [{ url: here, description: "this listener" }].concat(
    (spec.servers || []).filter(function (s) { return s.url !== here; }));
  var methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
  Object.keys(spec.paths || {}).forEach(function (path) {
    var item = spec.paths[path];
    (item.parameters || []).forEach(exampleAsText);
    methods.forEach(function (m) {
      if (item[m]) {
        (item[m].parameters || []).forEach(exampleAsText);
      }
    });
  });
  var shared = (spec.components || {}).parameters || {};
  Object.keys(shared).forEach(function (k) { exampleAsText(shared[k]); });
  spec.info.description = introduction(spec);
  return spec;
}

window.addEventListener("load", function () {
  fetch("/openapi.json")
    .then(function (r) { return r.json(); })
    .then(function (spec) {
      window.ui = SwaggerUIBundle({
        spec: forThisPage(spec),
        dom_id: "#reference",
        deepLinking: true,
        docExpansion: "list",
        defaultModelsExpandDepth: 0,
        displayRequestDuration: true,
        // Swagger UI would otherwise ask validator.swagger.io about the document.
        validatorUrl: null,
      });
    });
});
