package localtest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// debugClient logs, to stderr, every failed HTTP exchange with the
// emulators: the operation, the error, and for a response body that broke
// off, how many bytes had arrived. Silent while all goes well; for chasing an
// emulator flake in a CI log.
type debugClient struct{ base aws.HTTPClient }

func (d debugClient) Do(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	start := time.Now()
	resp, err := d.base.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localtest http: %s %s failed after %s: %v\n", req.URL.Host, op, time.Since(start), err)
		return resp, err
	}
	if resp.Close {
		fmt.Fprintf(os.Stderr, "localtest http: %s %s: the server closes the connection (status %d)\n", req.URL.Host, op, resp.StatusCode)
	}
	resp.Body = &debugBody{ReadCloser: resp.Body, op: op, host: req.URL.Host, length: resp.ContentLength, start: start}
	return resp, nil
}

type debugBody struct {
	io.ReadCloser
	op, host string
	length   int64
	read     int64
	start    time.Time
}

func (b *debugBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(os.Stderr, "localtest http: %s %s: body broke off after %d of %d bytes, %s: %v\n", b.host, b.op, b.read, b.length, time.Since(b.start), err)
	}
	return n, err
}
