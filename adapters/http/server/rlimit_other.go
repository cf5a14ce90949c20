//go:build !unix

package server

// raiseFileLimit knows no file limit here.
func raiseFileLimit() int { return 0 }
