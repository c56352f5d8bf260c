package agenttask

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/agentdlq/agentdlq/internal/jsonscan"
)

// DigestPrefix starts every ArgsDigest: the hash, and that it is taken of
// the RFC 8785 form. A digest of another form would carry another prefix,
// so the two never compare equal by accident.
const DigestPrefix = "jcs-sha256:"

// ArgsDigest is the digest of a task's args that the ledger keeps with its
// idempotency key (batch.Record.Begin): DigestPrefix and the hex SHA-256 of
// the args in the JSON Canonicalization Scheme (RFC 8785, by
// github.com/gowebpki/jcs): object members sorted, no insignificant
// whitespace, strings and numbers in one spelling. So the same args give
// the same digest however a producer spaced, ordered or escaped them
// ({"b":1, "a":"\u0078"} and {"a":"x","b":1.0} are one task), and any change
// of a value, key or array order gives another. RFC 8785 reads numbers as
// IEEE doubles: two integers beyond 2^53 that round to the same double make
// one digest. It fails on args that are not JSON.
//
// Args in the forms producers usually write are put in that form here
// (canon, whose buffers are reused); the others by the library.
func ArgsDigest(args []byte) (string, error) {
	c := canonPool.Get().(*canon)
	c.out, c.keys = c.out[:0], c.keys[:0]
	defer func() {
		if max(cap(c.out), cap(c.keys), cap(c.tmp), cap(c.text)) <= maxPooledCanon {
			canonPool.Put(c) // a rare large args' buffers are not kept
		}
	}()
	var canonical []byte
	if end, ok := c.value(args, 0, 0); ok && jsonscan.SkipWS(args, end) == len(args) {
		canonical = c.out
	} else {
		var err error
		if canonical, err = jcs.Transform(args); err != nil {
			return "", fmt.Errorf("agenttask: canonical args: %w", err)
		}
	}
	sum := sha256.Sum256(canonical)
	var digest [len(DigestPrefix) + 2*sha256.Size]byte
	copy(digest[:], DigestPrefix)
	hex.Encode(digest[len(DigestPrefix):], sum[:])
	return string(digest[:]), nil
}

// maxPooledCanon is the largest buffer a pooled canon keeps.
const maxPooledCanon = 64 << 10
