package sampleworker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentdlq/agentdlq/events/agenttask"
)

// Effects is the outside world of the sample's mutating tools (file.write,
// email.send): what a mail provider or a file store is to a real tool.
// With Config.Effects set, the worker records there every call of a
// mutating tool that reaches it (Reached, before anything applies) and
// every effect that took place (Applied, with the receipt); the tools'
// verifiers (Verifier) read it back with Lookup, which changes nothing.
// Locally it is an EffectDir that every local worker of a checkout shares
// with `agentdlq ledger verify`; the deployed sample worker has none, and
// its tools then have no verifier.
type Effects interface {
	// Reached records that a call for key reached the system.
	Reached(ctx context.Context, key string) error
	// Applied records that a call for key took effect, with its receipt.
	Applied(ctx context.Context, key, receipt string) error
	// Lookup returns what the system holds for key.
	Lookup(ctx context.Context, key string) (EffectLog, error)
}

// EffectLog is what Effects holds for one idempotency key.
type EffectLog struct {
	// Reached counts the calls that reached the system.
	Reached int
	// Receipts holds the receipt of each effect that took place, oldest
	// first: more than one is a duplicate effect.
	Receipts []string
}

// EffectDir keeps Effects as files, one a key (DIR/<sha256 of the key>.log,
// a line a call: "reached", or "applied RECEIPT"), appended to and never
// rewritten, so that concurrent workers of a checkout share it.
type EffectDir struct {
	// Dir is required: the directory of the files (created on demand).
	Dir string
}

var _ Effects = EffectDir{}

func (d EffectDir) file(key string) (string, error) {
	if d.Dir == "" {
		return "", errors.New("effects: no directory")
	}
	if key == "" {
		return "", errors.New("effects: no idempotency key")
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(d.Dir, hex.EncodeToString(sum[:])+".log"), nil
}

func (d EffectDir) appendLine(key, line string) error {
	f, err := d.file(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return fmt.Errorf("effects: %w", err)
	}
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("effects: %w", err)
	}
	// One write of one short line: O_APPEND keeps concurrent writers' lines whole.
	_, werr := fh.WriteString(line + "\n")
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("effects: %w", werr)
	}
	return nil
}

// Reached implements Effects.
func (d EffectDir) Reached(_ context.Context, key string) error { return d.appendLine(key, "reached") }

// Applied implements Effects.
func (d EffectDir) Applied(_ context.Context, key, receipt string) error {
	if receipt == "" || strings.ContainsAny(receipt, " \n") {
		return fmt.Errorf("effects: receipt %q: want one word", receipt)
	}
	return d.appendLine(key, "applied "+receipt)
}

// Lookup implements Effects: the zero EffectLog for a key never seen.
func (d EffectDir) Lookup(_ context.Context, key string) (EffectLog, error) {
	f, err := d.file(key)
	if err != nil {
		return EffectLog{}, err
	}
	data, err := os.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return EffectLog{}, nil
	}
	if err != nil {
		return EffectLog{}, fmt.Errorf("effects: %w", err)
	}
	var log EffectLog
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "reached":
			log.Reached++
		case strings.HasPrefix(line, "applied "):
			log.Receipts = append(log.Receipts, strings.TrimPrefix(line, "applied "))
		default:
			return EffectLog{}, fmt.Errorf("effects: %s: unreadable line %q", filepath.Base(f), line)
		}
	}
	return log, sc.Err()
}

// Verifier is the verifier of the sample's mutating tools over effects:
// confirmed when an effect of the task's args (its receipt, Receipt(args))
// took place for the key; no effect when calls for the key reached effects
// and none took effect; unknown when no call for the key reached it (a
// worker without this store ran the task), or when an effect recorded for
// the key has other args (the key was reused: a person must look).
func Verifier(effects Effects) agenttask.Verifier {
	return func(ctx context.Context, c agenttask.Call) (agenttask.Verification, error) {
		log, err := effects.Lookup(ctx, c.Key)
		if err != nil {
			return agenttask.Verification{}, err
		}
		want := Receipt(c.Task.Args)
		n := len(log.Receipts)
		switch {
		case n > 0:
			for _, got := range log.Receipts {
				if got != want {
					return agenttask.Verification{Verdict: agenttask.VerdictUnknown,
						Evidence: fmt.Sprintf("sample effect store: %d effect(s) of %s for the key, one with other args than the dead letter's (the key was reused?): check by hand", n, c.Task.Tool)}, nil
				}
			}
			ev := fmt.Sprintf("sample effect store: %s took effect %d time(s) for the key with the dead letter's args (%d call(s) reached it)", c.Task.Tool, n, log.Reached)
			if n > 1 {
				ev += "; more than once: a duplicate effect"
			}
			return agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: want, Evidence: ev}, nil
		case log.Reached > 0:
			return agenttask.Verification{Verdict: agenttask.VerdictNoEffect,
				Evidence: fmt.Sprintf("sample effect store: %d call(s) of %s reached it for the key, none took effect", log.Reached, c.Task.Tool)}, nil
		}
		return agenttask.Verification{Verdict: agenttask.VerdictUnknown,
			Evidence: "sample effect store: no call for the key reached it (was the task run by a worker without this store?): check by hand"}, nil
	}
}

// Versions is the range of tool_version the sample tools support: 1.x
// through 3.x.
const Versions = ">=1.0.0 <4.0.0"

// Catalog is the sample worker's tools, each supporting Versions (web.search,
// http.fetch, code.exec, file.read, sql.query, vector.search; file.write and
// email.send mutate), with Verifier over effects registered on its mutating
// tools: what `agentdlq ledger verify` runs locally. With nil effects it is
// the sample catalog alone. Each call returns a new map.
func Catalog(effects Effects) agenttask.Catalog {
	var v agenttask.Verifier
	if effects != nil {
		v = Verifier(effects)
	}
	c := agenttask.Catalog{}
	for _, t := range []agenttask.Tool{
		{Name: "web.search", Versions: Versions},
		{Name: "http.fetch", Versions: Versions},
		{Name: "code.exec", Versions: Versions},
		{Name: "file.read", Versions: Versions},
		{Name: "file.write", Versions: Versions, Mutates: true},
		{Name: "sql.query", Versions: Versions},
		{Name: "vector.search", Versions: Versions},
		{Name: "email.send", Versions: Versions, Mutates: true},
	} {
		if t.Mutates {
			t.Verify = v
		}
		c[t.Name] = t
	}
	return c
}
