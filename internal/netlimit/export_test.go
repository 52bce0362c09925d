package netlimit

// CapFor is capFor, for the tests.
var CapFor = capFor
