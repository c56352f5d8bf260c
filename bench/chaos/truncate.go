package chaos

import (
	"bytes"
	"math/rand/v2"
	"strconv"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// truncateToxic is a toxic of this package, registered with toxiproxy as
// "truncate": it lets a response's status line and headers through, then
// a random part of its body (0 to Content-Length-1 bytes, or 0 to 99 bytes
// without a Content-Length), and closes the connection. The client has been
// promised a body it never gets: the request reached the emulator and took
// effect, its response broke off. (toxiproxy's own limit_data cuts a
// connection after a fixed number of bytes: on the emulators' short
// responses that is inside the headers, which the SDK retries as a failed
// send, never the body, which it does not.)
type truncateToxic struct{}

type truncateState struct {
	head  []byte // the response's bytes up to the end of its headers
	limit int64  // body bytes let through; -1 until the headers are read
	sent  int64
}

func (t *truncateToxic) NewState() any { return &truncateState{limit: -1} }

func (t *truncateToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*truncateState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			data := c.Data
			if st.limit < 0 {
				st.head = append(st.head, data...)
				end := bytes.Index(st.head, []byte("\r\n\r\n"))
				if end < 0 && len(st.head) < 64<<10 {
					continue // headers not complete yet: hold them back
				}
				headers, body := st.head, []byte(nil)
				if end >= 0 {
					headers, body = st.head[:end+4], st.head[end+4:]
				}
				st.limit = bodyCut(headers)
				stub.Output <- &stream.StreamChunk{Timestamp: c.Timestamp, Data: headers}
				data = body
			}
			if left := st.limit - st.sent; left < int64(len(data)) {
				data = data[:left]
			}
			if len(data) > 0 {
				stub.Output <- &stream.StreamChunk{Timestamp: c.Timestamp, Data: data}
				st.sent += int64(len(data))
			}
			if st.sent >= st.limit {
				stub.Close()
				return
			}
		}
	}
}

// bodyCut draws how many body bytes to let through: fewer than the
// Content-Length of the headers, or fewer than 100 without one.
func bodyCut(headers []byte) int64 {
	n := int64(100)
	for _, line := range bytes.Split(headers, []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("content-length")) {
			if v, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64); err == nil && v > 0 {
				n = v
			}
		}
	}
	return rand.Int64N(n)
}

func init() { toxics.Register("truncate", new(truncateToxic)) }
