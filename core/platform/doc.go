// Package platform holds the domain primitives every qms module shares:
// domain errors with stable codes, identifiers, the clock, the unit of work,
// domain events, job scheduling and paging. It imports the standard library
// only, so every core module can depend on it.
package platform
