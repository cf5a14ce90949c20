// Package openapi publishes the OpenAPI 3.1 document of the API as built,
// at GET /api/v1/openapi.json, without a key.
//
// The document is assembled once, at start-up, from YAML fragments embedded
// from spec/: 00-base.yaml holds everything shared (info, servers, security
// schemes, the error envelope, pagination, the standard error responses and
// the X-Request-Id and X-RateLimit-* headers), and every module adds one
// file (10-entities.yaml, 11-queues.yaml, ...) holding its paths and
// component schemas. Files merge in name order; a path+method, a component
// or a tag defined twice is an error that stops start-up, so two modules can
// never silently overwrite each other.
//
// Merging also applies the platform's conventions, so fragments state only
// what is particular to an operation (see docs/openapi.md):
//   - every operation gets the standard error responses of its kind of
//     security (API key, admin bearer token, or public) that it does not
//     declare itself, and 415 when it takes a body;
//   - every inline success response gets the headers the platform sets on
//     it: X-Request-Id, and X-RateLimit-* under /api/v1;
//   - responses are listed in status order.
//
// Tests check every response of the end-to-end suites against this
// document (test/openapitest), and that it lists exactly the routes the
// application serves, so the document and the code cannot drift apart.
package openapi
