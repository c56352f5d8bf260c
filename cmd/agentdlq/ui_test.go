package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/console"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// agentdlq ui: the first stdout line is the URL with a fresh token; the token
// opens the console (then a cookie carries it); cancelling stops it cleanly.
func TestUIFirstLineAndStop(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	start := func(ctx context.Context) (string, chan error) {
		root := newRootCmd()
		pr, pw := io.Pipe()
		root.SetOut(pw)
		root.SetErr(io.Discard)
		root.SetArgs([]string{"--config", filepath.Join("..", "..", pipeline.DefaultFile), "ui", "--no-browser", "--reports", t.TempDir()})
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx); _ = pw.Close() }() // Close of a pipe's writer returns nil
		line, err := bufio.NewReader(pr).ReadString('\n')
		require.NoError(t, err)
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		return line, done
	}
	ctx, cancel := context.WithCancel(t.Context())
	line, done := start(ctx)
	m := regexp.MustCompile(`^agentdlq ui: (http://127\.0\.0\.1:\d+/)\?token=([0-9a-f]{64})\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	base, token := m[1], m[2]

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(base + "audit?p=agent-tasks&token=" + token)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "Audit of agent-tasks")
	assert.False(t, strings.Contains(resp.Request.URL.RawQuery, "token"), "the token is cleaned from the URL")
	resp, err = http.Get(base + "audit?p=agent-tasks")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no cookie, no token")

	cancel()
	require.NoError(t, <-done, "Ctrl-C stops it cleanly")

	ctx2, cancel2 := context.WithCancel(t.Context())
	line2, done2 := start(ctx2)
	assert.NotEqual(t, line, line2, "a fresh token each start")
	cancel2()
	require.NoError(t, <-done2)
}

// The console's Resolve on the emulators: a pipeline whose queues were
// never created is console.ErrQueuesNotFound (the overview says "not
// created locally"), one whose queues exist resolves.
func TestConsoleResolveNotCreated(t *testing.T) {
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	made := &pipeline.Pipeline{Name: localtest.Unique("made"), Owner: "o", MaxReceiveCount: 3}
	made.ApplyDefaults()
	q := localtest.Queues(t, cfg, made)
	missing := &pipeline.Pipeline{Name: localtest.Unique("never"), Owner: "o", MaxReceiveCount: 3}
	missing.ApplyDefaults()
	resolve := consoleResolve(client)

	got, err := resolve(t.Context(), made)
	require.NoError(t, err)
	assert.Equal(t, q.DLQURL, got.DLQURL)
	_, err = resolve(t.Context(), missing)
	require.ErrorIs(t, err, console.ErrQueuesNotFound)
	assert.ErrorIs(t, err, topology.ErrNotFound)
}
