// Package readme holds the tests that keep README.md true to the tree:
// every code block marked `<!-- snippet: PATH -->` is the file at PATH, byte
// for byte (the worker in a page is examples/worker/main.go); every path
// of the Layout section exists; only infra/... imports the CDK.
package readme
