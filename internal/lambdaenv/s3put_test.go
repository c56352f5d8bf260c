package lambdaenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/localtest"
)

var testCreds = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "token"))

// resign signs the request the server received again, with the headers the
// client signed, at the time it signed them: the Authorization must match,
// or the server (S3) would compute another canonical request.
func resign(t *testing.T, r *http.Request, body []byte) string {
	t.Helper()
	auth := r.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	require.True(t, ok, auth)
	signed, _, _ = strings.Cut(signed, ",")
	req, err := http.NewRequest(r.Method, "http://"+r.Host+r.RequestURI, bytes.NewReader(body))
	require.NoError(t, err)
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "content-length" {
			req.Header.Set(h, r.Header.Get(h))
		}
	}
	req.ContentLength = r.ContentLength
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	require.NoError(t, err)
	creds, err := testCreds.Retrieve(context.Background())
	require.NoError(t, err)
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	require.NoError(t, signer.SignHTTP(context.Background(), creds, req, r.Header.Get("X-Amz-Content-Sha256"), "s3", "eu-west-1", at))
	return req.Header.Get("Authorization")
}

func TestS3PutSignsOnePut(t *testing.T) {
	t.Parallel()
	body := []byte(`{"reduced":["history","folded"],"meta":{"message_id":"m+1"}}`)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		got, _ := io.ReadAll(r.Body)
		assert.Equal(t, http.MethodPut, r.Method)
		assert.Equal(t, "/eval-bucket/agent-tasks/evidence/2026-11-29/m%2B1%20x.json", r.URL.EscapedPath())
		assert.Equal(t, body, got)
		sum := sha256.Sum256(body)
		assert.Equal(t, hex.EncodeToString(sum[:]), r.Header.Get("X-Amz-Content-Sha256"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		assert.Equal(t, "token", r.Header.Get("X-Amz-Security-Token"))
		assert.True(t, strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/eu-west-1/s3/aws4_request"), r.Header.Get("Authorization"))
		assert.Equal(t, r.Header.Get("Authorization"), resign(t, r, got), "the signature covers the request as received")
		w.Header().Set("ETag", `"abc"`)
	}))
	defer srv.Close()
	c := &S3Put{Region: "eu-west-1", Credentials: testCreds, Endpoint: srv.URL + "/",
		Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }}
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("eval-bucket"),
		Key: aws.String("agent-tasks/evidence/2026-11-29/m+1 x.json"), Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	require.NoError(t, err)
	assert.Equal(t, `"abc"`, aws.ToString(out.ETag))
	assert.EqualValues(t, 1, calls.Load())
}

func TestS3PutRetriesWhatS3AsksToRetry(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		responses []int
		code      string
		wantCalls int32
		wantErr   string
	}{
		{"503 then ok", []int{503, 200}, "SlowDown", 2, ""},
		{"500 three times", []int{500, 500, 500}, "InternalError", 3, "InternalError: boom (HTTP 500"},
		{"403 once", []int{403}, "AccessDenied", 1, "AccessDenied: boom (HTTP 403"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				st := tt.responses[n-1]
				if st != 200 {
					w.WriteHeader(st)
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+tt.code+`</Code><Message>boom</Message></Error>`)
				}
			}))
			defer srv.Close()
			c := &S3Put{Region: "us-east-1", Credentials: testCreds, Endpoint: srv.URL}
			_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader("x")})
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "s3://b/k")
			}
			assert.Equal(t, tt.wantCalls, calls.Load())
		})
	}
}

func TestS3PutObjectURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ region, endpoint, bucket, key, want string }{
		{"us-east-1", "", "eval", "p/evidence/k.json", "https://eval.s3.us-east-1.amazonaws.com/p/evidence/k.json"},
		{"cn-north-1", "", "eval", "k", "https://eval.s3.cn-north-1.amazonaws.com.cn/k"},
		{"eu-west-1", "", "my.eval", "k", "https://s3.eu-west-1.amazonaws.com/my.eval/k"},
		{"us-east-1", "http://127.0.0.1:9000", "eval", "a b/c", "http://127.0.0.1:9000/eval/a%20b/c"},
	} {
		c := &S3Put{Region: tt.region, Endpoint: tt.endpoint}
		assert.Equal(t, tt.want, c.objectURL(tt.bucket, tt.key))
	}
}

// On the local S3 emulator: what S3Put puts, the SDK reads back.
func TestS3PutOnEmulator(t *testing.T) {
	cfg := localtest.AWS(t)
	bucket := localtest.Bucket(t, cfg)
	client := s3.NewFromConfig(cfg)
	c := NewS3Put(cfg, client.Options().BaseEndpoint)
	body := []byte(strings.Repeat(`{"claim":"check"}`, 1000))
	key := "agent-tasks/evidence/2026-11-29/0f1e-m.json"
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	require.NoError(t, err)
	out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	assert.Equal(t, body, got)
}
