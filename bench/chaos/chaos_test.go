package chaos_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/bench/chaos"
)

func upstream(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, c *chaos.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// truncate lets the status line and the headers through, then less of the
// body than Content-Length promises, then closes: the client reads a 200
// whose body breaks off, and the Client counts it broken.
func TestTruncateCutsTheBody(t *testing.T) {
	body := `{"Messages":[` + strings.Repeat(`{"Body":"x"},`, 200) + `{"Body":"y"}]}`
	toxic := chaos.Scenarios["truncate"]
	toxic.Toxicity = 1
	px, err := chaos.Start("t", upstream(t, body), toxic)
	require.NoError(t, err)
	t.Cleanup(px.Stop)
	c := chaos.NewClient()
	for range 20 {
		resp, data, err := get(t, c, px.URL)
		require.NotNil(t, resp, "the headers arrive: %v", err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int64(len(body)), resp.ContentLength)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Less(t, len(data), len(body))
		assert.True(t, strings.HasPrefix(body, string(data)), "what arrives is the body's start")
	}
	requests, broken := c.Counts()
	assert.Equal(t, int64(20), requests)
	assert.Equal(t, int64(20), broken)
}

// With a connection per request, a toxicity is a share of the requests,
// not of the few connections a pool would keep: about a fifth of 200
// requests break (bounds far from a fluke), where over kept-alive
// connections the sick ones die and the rest would break nothing more.
func TestToxicityIsAShareOfRequests(t *testing.T) {
	toxic := chaos.Scenarios["reset"]
	toxic.Toxicity = 0.2
	px, err := chaos.Start("r", upstream(t, `{}`), toxic)
	require.NoError(t, err)
	t.Cleanup(px.Stop)
	c := chaos.NewClient()
	for range 200 {
		_, _, _ = get(t, c, px.URL)
	}
	requests, broken := c.Counts()
	assert.Equal(t, int64(200), requests)
	assert.InDelta(t, 40, broken, 25, "about a fifth of the requests broke")
}

// none is the proxy alone: everything arrives whole.
func TestNoneBreaksNothing(t *testing.T) {
	px, err := chaos.Start("n", upstream(t, `{"ok":true}`), chaos.Scenarios["none"])
	require.NoError(t, err)
	t.Cleanup(px.Stop)
	c := chaos.NewClient()
	for range 10 {
		_, data, err := get(t, c, px.URL)
		require.NoError(t, err)
		assert.JSONEq(t, `{"ok":true}`, string(data))
	}
	_, broken := c.Counts()
	assert.Zero(t, broken)
}

func TestStartRefusesABadUpstream(t *testing.T) {
	_, err := chaos.Start("x", "not a url", chaos.Scenarios["none"])
	assert.ErrorContains(t, err, "is not an endpoint URL")
}
