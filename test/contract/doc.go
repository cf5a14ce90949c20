// Package contract holds the port contract suites, run against every
// backend (memory and PostgreSQL) so the embedded mode and production
// behave alike. Exercise is the one entry per backend: it takes a function
// that builds a fresh adapterset.Set, and hands it to every suite (River's
// exerciseQueue(ctx, t, driver) shape). A suite builds a set for each of
// its subtests and reads the ports it checks off the set's fields; there
// is no per-port harness to assemble.
package contract
