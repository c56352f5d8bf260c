// Package store is where triage keeps what it writes: the reports of each
// run (JSON, Markdown, HTML) and the eval exports. A Destination is a
// folder locally (Folder) or an S3 bucket and prefix in AWS (S3); Parse reads
// either from a flag's value. Package triage writes and reads through the
// Destination interface only.
package store

import "context"

// Destination is where eval exports and reports go: a folder locally, an S3
// bucket and prefix in AWS. Keys are slash-separated and relative to the
// destination's root.
type Destination interface {
	// Put writes one object, replacing any object of that key.
	Put(ctx context.Context, key string, data []byte, contentType string) error
	// List returns the keys under prefix, in lexical order.
	List(ctx context.Context, prefix string) ([]string, error)
	// Get reads one object.
	Get(ctx context.Context, key string) ([]byte, error)
	// String names the destination for people ("s3://bucket/prefix", a path).
	String() string
}

var (
	_ Destination = Folder{}
	_ Destination = (*S3)(nil)
)
