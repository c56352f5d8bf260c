// Package chaos puts a fault-injecting TCP proxy (toxiproxy, in-process)
// between a client and a local emulator, so that the load bench and the
// tests can show what a hostile network does to the pipeline: latency and
// jitter, connection resets, timeouts, truncated and sliced responses.
package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Toxic is one toxiproxy toxic: its type, the direction it acts on
// ("downstream", the responses, or "upstream", the requests), the share of
// connections it touches (toxicity, 0..1) and its attributes.
type Toxic struct {
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]int `json:"attributes"`
}

// Scenarios are the named faults of `agentdlq local bench --chaos` and
// `make bench-chaos`, each written out as numbers:
//
//   - latency: every response 20 ms late, ±20 ms of jitter;
//   - reset: 5% of connections reset by the peer at their first response
//     (the request has reached the emulator: the client cannot tell whether it
//     took effect);
//   - timeout: 3% of connections stall and are closed after 2 s;
//   - truncate: 5% of responses break off in their body: the headers
//     arrive, then a random part of the body (less than its
//     Content-Length), then the connection closes (the "truncate" toxic of
//     this package);
//   - slicer: every response cut into ~64-byte pieces 0.1 ms apart;
//   - none: the proxy and a connection per request, no toxic (the control:
//     what the proxy itself costs).
var Scenarios = map[string]Toxic{
	"none":     {},
	"latency":  {Type: "latency", Stream: "downstream", Toxicity: 1, Attributes: map[string]int{"latency": 20, "jitter": 20}},
	"reset":    {Type: "reset_peer", Stream: "downstream", Toxicity: 0.05, Attributes: map[string]int{"timeout": 0}},
	"timeout":  {Type: "timeout", Stream: "downstream", Toxicity: 0.03, Attributes: map[string]int{"timeout": 2000}},
	"truncate": {Type: "truncate", Stream: "downstream", Toxicity: 0.05, Attributes: map[string]int{}},
	"slicer":   {Type: "slicer", Stream: "downstream", Toxicity: 1, Attributes: map[string]int{"average_size": 64, "size_variation": 32, "delay": 100}},
}

// ScenarioNames are the names of Scenarios, sorted.
func ScenarioNames() []string {
	names := make([]string, 0, len(Scenarios))
	for n := range Scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Proxy is a running proxy in front of one upstream endpoint.
type Proxy struct {
	p *toxiproxy.Proxy
	// URL is the endpoint to give a client instead of the upstream's
	// (http://127.0.0.1:<port>).
	URL string
}

// Start starts a proxy on 127.0.0.1 (a free port) in front of upstream, an
// endpoint URL such as http://127.0.0.1:4566, with the toxics given.
func Start(name, upstream string, toxics ...Toxic) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("chaos: upstream %q is not an endpoint URL", upstream)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", u.Host)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start proxy %s: %w", name, err)
	}
	for i, t := range toxics {
		if t.Type == "" {
			continue // the "none" scenario
		}
		doc := map[string]any{"name": fmt.Sprintf("%s-%d", t.Type, i), "type": t.Type, "stream": t.Stream, "toxicity": t.Toxicity, "attributes": t.Attributes}
		data, _ := json.Marshal(doc)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(string(data))); err != nil {
			p.Stop()
			return nil, fmt.Errorf("chaos: toxic %s on %s: %w", t.Type, name, err)
		}
	}
	return &Proxy{p: p, URL: u.Scheme + "://" + p.Listen}, nil
}

// Stop closes the proxy and its connections.
func (p *Proxy) Stop() { p.p.Stop() }

// Client is the SDK's HTTP client for the clients that talk through a
// Proxy: one connection per request (no keep-alive), and a count of the
// exchanges and of those the network broke. toxiproxy draws a toxic's
// toxicity once per connection, when it opens: over kept-alive connections a
// toxicity of 5% would touch the few connections the pool opens first and
// then nothing more, as the sick ones die and the healthy ones live on. With
// a connection per request it touches 5% of the requests.
type Client struct {
	base             aws.HTTPClient
	requests, broken atomic.Int64
	mu               sync.Mutex
	samples          []string
}

// maxSamples is how many broken exchanges a Client describes.
const maxSamples = 10

// NewClient returns a Client.
func NewClient() *Client {
	return &Client{base: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.DisableKeepAlives = true })}
}

// Do implements aws.HTTPClient.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	op, start := req.Header.Get("X-Amz-Target"), time.Now()
	resp, err := c.base.Do(req)
	if err != nil {
		c.broke(fmt.Sprintf("%s: no response after %s: %v", op, time.Since(start).Round(time.Millisecond), err))
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c, op: op, status: resp.StatusCode, length: resp.ContentLength, start: start}
	return resp, nil
}

func (c *Client) broke(sample string) {
	c.broken.Add(1)
	c.mu.Lock()
	if len(c.samples) < maxSamples {
		c.samples = append(c.samples, sample)
	}
	c.mu.Unlock()
}

// Samples describes the first broken exchanges (at most 10): the
// operation, how far the response got, and the error.
func (c *Client) Samples() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.samples)
}

// Counts returns the exchanges (each attempt of each call) and those that
// failed at the network: no response, or a body that broke off.
func (c *Client) Counts() (requests, broken int64) { return c.requests.Load(), c.broken.Load() }

type countedBody struct {
	io.ReadCloser
	c      *Client
	once   sync.Once
	op     string
	status int
	length int64
	read   int64
	start  time.Time
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		b.once.Do(func() {
			b.c.broke(fmt.Sprintf("%s: status %d, body broke off after %d of %d bytes, %s: %v",
				b.op, b.status, b.read, b.length, time.Since(b.start).Round(time.Millisecond), err))
		})
	}
	return n, err
}
