// Package sdkhttp holds the one fix agentdlq applies to the AWS SDK's HTTP
// exchange: the cause of the lost ReceiveMessage responses of issue 18
// (docs/local.md, "lost receives"). Every client agentdlq builds has it; a
// worker of your own applies it to its aws.Config with Apply, as
// examples/worker does.
//
// The defect lives between smithy-go and net/http, not in an emulator:
//
//  1. smithy-go (transport/http, Request.Build) hands net/http the request
//     body wrapped in a safe closer; when the stream is a *bytes.Reader (every
//     JSON-protocol call: SQS, DynamoDB) the wrapper also has WriteTo, and
//     after Close its WriteTo returns (0, io.EOF).
//  2. smithy-go's ClientHandler closes that body as soon as Do returns, that
//     is as soon as the response's headers are in.
//  3. net/http's write loop, after copying Content-Length bytes of the body,
//     copies the body once more to io.Discard to see it end
//     (transfer.go, transferWriter.writeBody). io.Copy prefers WriteTo and
//     returns its error as it is, so when the write loop gets there after
//     step 2, Request.write returns a bare io.EOF, the write loop takes it for
//     a failed write and closes the connection (transport.go, writeLoop:
//     pc.close(err)).
//  4. The SDK is still reading the response body: every byte past net/http's
//     first 4,096-byte read is lost ("failed to discard remaining HTTP
//     response body ... use of closed network connection"). The SDK retries
//     the call; a ReceiveMessage retried this way leaves the first attempt's
//     messages in flight for the whole visibility timeout, a SendMessageBatch
//     may send its entries twice.
//
// The race needs the response to arrive before the write loop's goroutine
// runs again after writing the body: a loopback server under CPU load wins it
// often, a server a network away rarely. Apply adds a middleware, innermost in
// the deserialize step (after signing and the retry loop, just before the
// request is sent), that hands smithy-go the same stream without WriteTo, so
// the final copy reads through Read, whose io.EOF after Close io.Copy takes
// for the end of the body. TestBodyClosedBeforeWriteLoopEnds reproduces the
// defect deterministically with the SDK alone and shows the fix.
package sdkhttp

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Apply adds the fix to every client later built from cfg (sqs.NewFromConfig,
// dynamodb.NewFromConfig, ...), whatever its HTTP client.
func Apply(cfg *aws.Config) { cfg.APIOptions = append(cfg.APIOptions, AddMiddleware) }

// AddMiddleware adds the fix to one client's stack (an APIOptions entry).
func AddMiddleware(stack *middleware.Stack) error {
	if _, ok := stack.Deserialize.Get(plainBody{}.ID()); ok {
		return nil
	}
	return stack.Deserialize.Add(plainBody{}, middleware.After)
}

// plainBody replaces a request stream that has WriteTo (a *bytes.Reader) by
// the same stream with Read and Seek only. Seek keeps the SDK's rewinding on
// retries and its length checks working.
type plainBody struct{}

func (plainBody) ID() string { return "agentdlq.PlainRequestBody" }

func (plainBody) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	if req, ok := in.Request.(*smithyhttp.Request); ok {
		if plain, ok := withoutWriteTo(req.GetStream()); ok {
			r, err := req.SetStream(plain)
			if err != nil {
				return middleware.DeserializeOutput{}, middleware.Metadata{}, err
			}
			in.Request = r
		}
	}
	return next.HandleDeserialize(ctx, in)
}

func withoutWriteTo(s io.Reader) (io.Reader, bool) {
	if _, ok := s.(io.WriterTo); !ok {
		return nil, false
	}
	if rs, ok := s.(io.ReadSeeker); ok {
		return struct{ io.ReadSeeker }{rs}, true
	}
	return struct{ io.Reader }{s}, true
}
