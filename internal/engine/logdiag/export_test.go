package logdiag

// What the external tests (package logdiag_test, which runs the rules of
// every engine kind through engine) use of the package's internals.
var StripANSI = stripANSI

const MaxEvidence = maxEvidence
