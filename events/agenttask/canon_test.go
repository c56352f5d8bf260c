package agenttask

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var canonSeeds = []string{
	`{"to":["a@example.com","b@example.com"],"subject":"x","n":1}`,
	" {\n \"b\" : [ 1 , {\"z\":null,\"a\":true} ],\t\"a\":\"x\", \"c\":{} }",
	`{"amount_cents":1999,"currency":"EUR","customer":"cus_1","meta":{"run":"r-1","step":3,"tags":["a","b"]},"neg":-12}`,
	`{"caf\u00e9":1}`, `{"a":"\u0078"}`, `{"n":1.0E0}`, `{"n":12345678901234567}`, `{"a":1,"a":2}`,
	`{"é":1,"e":2}`, `{"s":"a\"b\\c\/d\n\u0001\u00e9\ud83d\ude00\u2028"}`, `{"v":[0.0123,-0.4561,0.789,1.0E0,123456789012345678,0.1e-5,5e-324]}`, `[]`, `[[],{},""]`, `"x"`, `-0`, `0`, `{"a":-0}`, `{"a":01}`, "{\"a\":\"\xff\"}",
	// More members than the insertion sort takes, out of order, one repeated.
	`{"con\u0074ex\u0074":{"step":7,"o\u006B":false,"w":6.02214076e23,"s":1e-7,"z":-0}}`, `{"😀":1,"\uffff":2,"é":3,"\u00e9t\u00e9":4}`, `{"a\nb":1,"a\"":[1e-7,-1.5e300]}`,
	`{"t":1,"s":2,"r":3,"q":4,"p":5,"o":6,"n":7,"m":8,"l":9,"k":10,"j":11,"i":12,"h":13,"g":14,"f":15,"e":16,"d":17,"c":18,"b":19,"a":20}`,
	`{"t":1,"s":2,"r":3,"q":4,"p":5,"o":6,"n":7,"m":8,"l":9,"k":10,"j":11,"i":12,"h":13,"g":14,"f":15,"e":16,"d":17,"c":18,"b":19,"t":20}`,
}

// The fast form is RFC 8785's wherever it answers.
func FuzzArgsDigest(f *testing.F) {
	for _, s := range canonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		canon, end, ok := appendCanonical(nil, args)
		if !ok || end < 0 {
			return
		}
		if len(args[end:]) > 0 && !json.Valid(args) {
			return // trailing bytes: ArgsDigest gives these to the library
		}
		require.True(t, json.Valid(args[:end]), "the fast form accepted invalid JSON %q", args[:end])
		want, err := jcs.Transform(args[:end])
		require.NoError(t, err, "%q", args[:end])
		assert.Equal(t, string(want), string(canon), "%q", args[:end])
	})
}

func TestAppendCanonicalAnswersTheUsualForms(t *testing.T) {
	t.Parallel()
	for _, s := range canonSeeds[:3] {
		_, _, ok := appendCanonical(nil, []byte(s))
		assert.True(t, ok, "%s", s)
	}
	// Also the forms of the independent generator (scripts/peer-bench/gen.mjs):
	// escaped and non-ASCII keys, exponents, -0.
	for _, s := range []string{`{"con\u0074ex\u0074":{"o\u006B":false}}`, `{"é":1,"e":2}`, `{"n":6.02214076e23}`, `{"n":1e-7}`, `{"n":1e21}`, `-0`} {
		_, _, ok := appendCanonical(nil, []byte(s))
		assert.True(t, ok, "%s", s)
	}
	// The library's: a lone surrogate, a repeated key, invalid UTF-8, a key
	// from U+E000 up (UTF-16 order is not UTF-8's there).
	for _, s := range []string{`{"a":"\ud800"}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"\ue000":1}`, `{"😀":1,"\uffff":2}`} {
		_, _, ok := appendCanonical(nil, []byte(s))
		assert.False(t, ok, "%s goes to the library", s)
	}
}

func BenchmarkArgsDigest(b *testing.B) {
	args := []byte(canonSeeds[2])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ArgsDigest(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// ArgsDigest's pooled buffers carry nothing from one call to the next: each
// seed, valid or not, in turn and again in reverse, digests as the library's
// form does, whatever failed halfway before it.
func TestArgsDigestPooledBuffers(t *testing.T) {
	t.Parallel()
	order := append(slices.Clone(canonSeeds), canonSeeds...)
	slices.Reverse(order[len(canonSeeds):])
	for _, s := range order {
		got, err := ArgsDigest([]byte(s))
		want, jerr := jcs.Transform([]byte(s))
		if jerr != nil {
			assert.Error(t, err, "%s", s)
			continue
		}
		require.NoError(t, err, "%s", s)
		sum := sha256.Sum256(want)
		assert.Equal(t, DigestPrefix+hex.EncodeToString(sum[:]), got, "%s", s)
	}
}

// plainNumber keeps a number's text only where RFC 8785 writes that text,
// and keeps the forms producers usually write.
func TestPlainNumber(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    string
		keep bool
	}{
		{"0", true}, {"7", true}, {"-12", true}, {"100", true}, {"100000000000000000000", true},
		{"123456789012345", true}, {"12345678901234500000", true}, {"0.5", true}, {"-0.5", true},
		{"0.000001", true}, {"12.345", true}, {"123456789.123456", true}, {"0.0123", true},
		// Sent on: an exponent or a spelling toString does not write, or
		// more digits than plainNumber vouches for (ParseFloat decides).
		{"-0", false}, {"1000000000000000000000", false}, {"1234567890123456", false}, {"0.0000001", false},
		{"0.0", false}, {"1.50", false}, {"123456789.1234567", false}, {"5e-324", false}, {"1E2", false},
	} {
		canon, err := jcs.Transform([]byte(tt.n))
		require.NoError(t, err, tt.n)
		got := plainNumber([]byte(tt.n))
		assert.Equal(t, tt.keep, got, tt.n)
		if got {
			assert.Equal(t, tt.n, string(canon), "plainNumber kept %s", tt.n)
		}
	}
}

// appendCanonical appends the fast form of the args value at b[0:] to dst
// (canon), with the index after it.
func appendCanonical(dst, b []byte) ([]byte, int, bool) {
	c := canon{out: dst}
	end, ok := c.value(b, 0, 0)
	return c.out, end, ok
}
