package document

// Failing is failing for the package's external tests.
var Failing = failing
