// Package contract holds the port contract suites: one suite per port,
// run against every adapter that implements it (memory and postgres), so
// the embedded mode and production behave alike. Each Run* function takes a
// factory that builds a fresh adapter for every subtest.
package contract
