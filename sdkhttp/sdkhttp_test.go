package sdkhttp_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentdlq/agentdlq/sdkhttp"
)

// TestBodyClosedBeforeWriteLoopEnds reproduces the lost receives of issue 18
// with the SDK alone, against a plain Go server on 127.0.0.1: no emulator, no
// load. The client's connection holds net/http's write loop right after it
// has written the request body, until the SDK has the response's headers and
// has closed its request body (smithy-go's ClientHandler does that as soon as
// Do returns). That is the order a loaded machine produces by chance; here it
// is produced every time.
//
// Without the fix the write loop's final copy of the closed body returns a
// bare io.EOF (seen by an httptrace WroteRequest hook), net/http closes the
// connection while the 10-message response is still being read, and the SDK
// sends ReceiveMessage again: on SQS the first response's messages would now
// be in flight, received by no one, for the visibility timeout. With
// sdkhttp's middleware the same exchange is one request and all 10 messages.
//
// The "sdk" case pins the defect in the dependencies: when it fails, check
// whether smithy-go or net/http fixed it, and retire sdkhttp.
func TestBodyClosedBeforeWriteLoopEnds(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fixed        bool
		wantWriteErr error // what Request.write returned for the first attempt
		wantRequests int32 // ReceiveMessage calls the server answered
	}{
		{name: "sdk", fixed: false, wantWriteErr: io.EOF, wantRequests: 2},
		{name: "sdk+sdkhttp", fixed: true, wantWriteErr: nil, wantRequests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := receiveThroughHeldWriteLoop(t, tc.fixed)
			if !errors.Is(got.writeErr, tc.wantWriteErr) || (tc.wantWriteErr == nil && got.writeErr != nil) {
				t.Errorf("first attempt's Request.write returned %v, want %v", got.writeErr, tc.wantWriteErr)
			}
			if got.requests != tc.wantRequests {
				t.Errorf("server answered %d ReceiveMessage requests, want %d", got.requests, tc.wantRequests)
			}
			if got.messages != 10 {
				t.Errorf("client got %d messages, want 10", got.messages)
			}
			if tc.fixed && got.connsClosed != 0 {
				t.Errorf("client closed %d connections, want none", got.connsClosed)
			}
		})
	}
}

type heldResult struct {
	writeErr    error
	requests    int32
	messages    int
	connsClosed int32
}

func receiveThroughHeldWriteLoop(t *testing.T, fixed bool) heldResult {
	t.Helper()
	var res heldResult

	// The server: every ReceiveMessage gets the same 10 messages of 1 KiB,
	// about 11 KB of response, well past net/http's 4,096-byte first read.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	resp := receiveResponse(10, 1024)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		requests.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write(resp)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	// The client's connections: the first body write is held until the SDK
	// has closed the request body.
	sdkClosed := make(chan struct{})
	connClosed := make(chan struct{}, 16)
	var holdOnce sync.Once
	var closes atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &heldConn{Conn: c, hold: func(p []byte) {
			if bytes.HasPrefix(p, []byte("POST ")) {
				return // the headers: net/http flushes them before the body
			}
			holdOnce.Do(func() {
				select {
				case <-sdkClosed:
				case <-time.After(30 * time.Second):
				}
			})
		}, onClose: func() { closes.Add(1); connClosed <- struct{}{} }}, nil
	}

	wrote := make(chan error, 16)
	firstAttempt := true
	// observe runs innermost in the deserialize step, after the HTTP
	// exchange's Do (and smithy-go's Close of the request body), before the
	// SDK reads the response body.
	observe := middleware.DeserializeMiddlewareFunc("observe", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if firstAttempt {
			firstAttempt = false
			close(sdkClosed) // lets the held write loop go on
			select {
			case res.writeErr = <-wrote:
			case <-time.After(30 * time.Second):
				t.Error("the write loop never finished the first request")
			}
			if res.writeErr != nil { // net/http is closing the connection
				select {
				case <-connClosed:
				case <-time.After(30 * time.Second):
					t.Error("the write loop failed but the connection stayed open")
				}
			}
		}
		return out, md, err
	})
	apiOptions := []func(*middleware.Stack) error{}
	if fixed {
		apiOptions = append(apiOptions, sdkhttp.AddMiddleware)
	}
	apiOptions = append(apiOptions, func(s *middleware.Stack) error { return s.Deserialize.Add(observe, middleware.After) })

	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String("http://" + ln.Addr().String()),
		HTTPClient:   &http.Client{Transport: &http.Transport{DialContext: dial}},
		APIOptions:   apiOptions,
	})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			select {
			case wrote <- info.Err:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String("http://" + ln.Addr().String() + "/000000000000/q"),
		MaxNumberOfMessages: 10,
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	res.requests = requests.Load()
	res.messages = len(out.Messages)
	res.connsClosed = closes.Load()
	return res
}

type heldConn struct {
	net.Conn
	hold      func([]byte)
	onClose   func()
	closeOnce sync.Once
}

func (c *heldConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.hold(p)
	return n, err
}

func (c *heldConn) Close() error {
	c.closeOnce.Do(c.onClose)
	return c.Conn.Close()
}

// receiveResponse is a ReceiveMessage response (JSON protocol) of n messages
// with bodies of size bytes.
func receiveResponse(n, size int) []byte {
	type msg struct {
		MessageId, ReceiptHandle, MD5OfBody, Body string
	}
	var ms []msg
	body := strings.Repeat("x", size)
	for i := range n {
		ms = append(ms, msg{
			MessageId:     fmt.Sprintf("m-%d", i),
			ReceiptHandle: fmt.Sprintf("rh-%d", i),
			MD5OfBody:     fmt.Sprintf("%x", md5.Sum([]byte(body))),
			Body:          body,
		})
	}
	b, _ := json.Marshal(map[string]any{"Messages": ms})
	return b
}
