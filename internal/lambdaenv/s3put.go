package lambdaenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Put puts objects into S3 with one SigV4-signed HTTP PUT each: the one S3
// call the worker makes (a claim check of an oversized dead letter;
// batch.S3API). It stands in for s3.NewFromConfig in the worker's
// bootstrap, whose endpoint rules, checksums, SigV4a, event streams and
// XML decoders weigh about 1 MB of the arm64 bootstrap's 10 MB budget.
//
// The endpoint is Endpoint's custom one (path style: <endpoint>/<bucket>/<key>),
// else the bucket's virtual host in the region's partition
// (https://<bucket>.s3.<region>.amazonaws.com, .amazonaws.com.cn in China,
// path style for a bucket name with dots). FIPS and dual-stack endpoints are
// not chosen by it: set AWS_ENDPOINT_URL_S3 for them. A PUT that fails with a
// network error, 429, 5xx or SlowDown is tried again, three tries in all.
type S3Put struct {
	Region      string
	Credentials aws.CredentialsProvider
	// Endpoint is optional: a custom endpoint ("" for AWS's).
	Endpoint string
	// HTTP is optional (default a client with a 30 s timeout).
	HTTP *http.Client
	// Now is optional (default time.Now): the signing time.
	Now func() time.Time
}

// NewS3Put returns an S3Put with cfg's region and credentials and the
// custom endpoint, when not nil (Endpoint(os.Getenv, "S3")).
func NewS3Put(cfg aws.Config, endpoint *string) *S3Put {
	return &S3Put{Region: cfg.Region, Credentials: cfg.Credentials, Endpoint: aws.ToString(endpoint)}
}

// s3PutTries is how many times a PUT is tried.
const s3PutTries = 3

// PutObject implements batch.S3API: Bucket, Key and Body are required;
// ContentType is sent when set. The optFns are not supported.
func (c *S3Put) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	bucket, key := aws.ToString(in.Bucket), aws.ToString(in.Key)
	if bucket == "" || key == "" || in.Body == nil {
		return nil, fmt.Errorf("s3 PutObject: bucket, key and body are required")
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 PutObject s3://%s/%s: read body: %w", bucket, key, err)
	}
	url := c.objectURL(bucket, key)
	var last error
	for try := range s3PutTries {
		if try > 0 {
			t := time.NewTimer(time.Duration(50<<(2*try)) * time.Millisecond) // 200 ms, 800 ms
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("s3 PutObject s3://%s/%s: %w (after: %w)", bucket, key, ctx.Err(), last)
			case <-t.C:
			}
		}
		out, retry, err := c.put(ctx, url, in, body)
		if err == nil {
			return out, nil
		}
		last = fmt.Errorf("s3 PutObject s3://%s/%s: %w", bucket, key, err)
		if !retry || ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (c *S3Put) put(ctx context.Context, url string, in *s3.PutObjectInput, body []byte) (*s3.PutObjectOutput, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.ContentLength = int64(len(body))
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if ct := aws.ToString(in.ContentType); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.Credentials == nil {
		return nil, false, fmt.Errorf("no credentials")
	}
	creds, err := c.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("credentials: %w", err)
	}
	// S3 signs the path as sent: escaped once (objectURL), not twice.
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if err := signer.SignHTTP(ctx, creds, req, hash, "s3", c.Region, now().UTC()); err != nil {
		return nil, false, fmt.Errorf("sign: %w", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		out := &s3.PutObjectOutput{}
		if v := resp.Header.Get("ETag"); v != "" {
			out.ETag = aws.String(v)
		}
		if v := resp.Header.Get("X-Amz-Version-Id"); v != "" {
			out.VersionId = aws.String(v)
		}
		return out, false, nil
	}
	code, msg := xmlField(data, "Code"), xmlField(data, "Message")
	retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || code == "SlowDown" || code == "RequestTimeout"
	if code == "" {
		code = resp.Status
	}
	return nil, retry, fmt.Errorf("%s: %s (HTTP %d, request id %s)", code, msg, resp.StatusCode, resp.Header.Get("X-Amz-Request-Id"))
}

// objectURL is the object's URL: path style on a custom endpoint or for a
// bucket name with dots, else the bucket's virtual host.
func (c *S3Put) objectURL(bucket, key string) string {
	path := "/" + escapeKey(key)
	if c.Endpoint != "" {
		return strings.TrimSuffix(c.Endpoint, "/") + "/" + bucket + path
	}
	host := "s3." + c.Region + "." + dnsSuffix(c.Region)
	if strings.Contains(bucket, ".") {
		return "https://" + host + "/" + bucket + path
	}
	return "https://" + bucket + "." + host + path
}

// dnsSuffix is the DNS suffix of a region's partition.
func dnsSuffix(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "amazonaws.com.cn"
	case strings.HasPrefix(region, "eusc-"):
		return "amazonaws.eu"
	case strings.HasPrefix(region, "us-isob-"):
		return "sc2s.sgov.gov"
	case strings.HasPrefix(region, "us-isof-"):
		return "csp.hci.ic.gov"
	case strings.HasPrefix(region, "us-iso-"):
		return "c2s.ic.gov"
	case strings.HasPrefix(region, "eu-isoe-"):
		return "cloud.adc-e.uk"
	}
	return "amazonaws.com"
}

// escapeKey percent-encodes every byte of an object key but the unreserved
// characters (A-Z a-z 0-9 - _ . ~) and '/', as SigV4 canonicalizes S3 paths.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		ch := key[i]
		switch {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9',
			ch == '-', ch == '_', ch == '.', ch == '~', ch == '/':
			b.WriteByte(ch)
		default:
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// xmlField is the text of the first <name> element of an S3 error document.
func xmlField(doc []byte, name string) string {
	s := string(doc)
	i := strings.Index(s, "<"+name+">")
	if i < 0 {
		return ""
	}
	s = s[i+len(name)+2:]
	j := strings.Index(s, "</"+name+">")
	if j < 0 {
		return ""
	}
	return s[:j]
}
