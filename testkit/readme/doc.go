// Package readme holds the tests that keep README.md true to the tree:
// every code block marked `<!-- snippet: PATH -->` (in README.md or a page
// of docs/) is the file at PATH, byte for byte, and every block marked
// `<!-- excerpt: PATH -->` is a run of PATH's lines as they stand (the
// README shows examples/worker/main.go's handler); every path of the Layout
// section exists; only infra/... imports the CDK; and scripts/test-deps.sh,
// which installs what `make test` needs beyond the README's requirements,
// does what it says on a PATH of fakes.
package readme
