package sqsevent

import (
	"fmt"
	"testing"

	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestDecodeIndependentEvents decodes the events of the independent
// generator (scripts/peer-bench/gen.mjs, make bench-indep: written from the
// contracts, not from events/gen; bodies pretty-printed or compact, non-ASCII
// raw or escaped in both layers, emoji as surrogate pairs, "\/", shuffled
// member orders, 0-10 message attributes of every type, md5OfMessageAttributes
// on some records) with Decode and with encoding/json, which must agree
// on every record, byte for byte.
func TestDecodeIndependentEvents(t *testing.T) {
	t.Parallel()
	for _, mix := range [][3]int{{400, 50, 11}, {200, 90, 12}, {100, 0, 13}} {
		t.Run(fmt.Sprintf("n=%d,ok=%d,seed=%d", mix[0], mix[1], mix[2]), func(t *testing.T) {
			t.Parallel()
			data, _ := localtest.PeerGen(t, mix[0], mix[1], mix[2])
			ev := diffDecode(t, data)
			if ev == nil || len(ev.Records) != mix[0] {
				t.Fatalf("decoded %d records, want %d", len(ev.Records), mix[0])
			}
			attrs := 0
			for i := range ev.Records {
				if ev.Records[i].HasMessageAttributes() {
					attrs++
				}
			}
			if attrs == 0 {
				t.Fatal("no record with message attributes")
			}
		})
	}
}
