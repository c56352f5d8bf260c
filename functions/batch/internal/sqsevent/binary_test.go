package sqsevent

import "testing"

// A plain binaryValue followed, in the same record or a later one, by one
// with an escape ("\/", as a JSON writer may write the "/" of base64):
// the decoder's base64 scratch must never be the payload itself. Found by
// the independent generator (scripts/peer-bench/gen.mjs): the scratch took
// the plain value's bytes in the payload as its own, and the escaped value
// was decoded over them, so the first record's attribute (and, with a long
// enough value, the JSON after it) was overwritten in the payload. A lean
// dead letter of that record then carried other bytes than the producer's,
// or the walk over the damaged attributes panicked
// (TestLeanDeadLetterKeepsBinaryAttributes in functions/sampleworker).
func TestDecodeBinaryValueThenEscapedOne(t *testing.T) {
	t.Parallel()
	for _, c := range []string{
		`{"Records":[{"messageId":"a","messageAttributes":{"sig":{"binaryValue":"QUFBQUFBQUFBQUFBQUFBQUFB","dataType":"Binary"}}},` +
			`{"messageId":"b","messageAttributes":{"blob":{"binaryValue":"yMnKy8zNzs\/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5ufo6err7O3u7\/Dx8vP09fb3","dataType":"Binary"}}}]}`,
		`{"Records":[{"messageId":"a","messageAttributes":{"sig":{"binaryValue":"QUFB","dataType":"Binary"},` +
			`"blob":{"binaryValue":"yMnKy8zNzs\/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5ufo6err7O3u7\/Dx8vP09fb3","dataType":"Binary"}}}]}`,
		`{"Records":[{"messageId":"a","messageAttributes":{"sig":{"binaryValue":"QUFB","dataType":"Binary"}}},` +
			`{"messageId":"b","messageAttributes":{"blob":{"binaryValue":"","binaryListValues":["yMnKy8zNzs\/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5ufo6err7O3u7\/Dx8vP09fb3"],"dataType":"Binary"}}}]}`,
	} {
		diffDecode(t, []byte(c))
	}
}
