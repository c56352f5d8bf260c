package ledger

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A producer chooses its idempotency keys, and many producers (tenants,
// pipelines) share one ledger table: a key is only the producer's own
// within its scope. Key makes the ledger key of a task from its pipeline,
// its tenant and its idempotency key, so that no key of one tenant or one
// pipeline names another's entry.

// scopePrefix starts every scoped key.
const scopePrefix = "scope:"

// Key returns the ledger key of the task with idempotency key key of
// tenant on pipeline. Each of pipeline and tenant is written with its
// length in bytes before it:
//
//	scope:<len(pipeline)>:<pipeline>:<len(tenant)>:<tenant>:<key>
//
// e.g. scope:11:agent-tasks:4:acme:acme:run-0042:task-0007. The lengths
// make the form injective: no choice of key (or tenant) containing ':' can
// spell another pipeline's or tenant's key, as a plain join would let it.
// ParseKey reads it back.
func Key(pipeline, tenant, key string) string {
	var b strings.Builder
	b.Grow(len(scopePrefix) + 8 + len(pipeline) + len(tenant) + len(key))
	b.WriteString(scopePrefix)
	b.WriteString(strconv.Itoa(len(pipeline)))
	b.WriteByte(':')
	b.WriteString(pipeline)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(len(tenant)))
	b.WriteByte(':')
	b.WriteString(tenant)
	b.WriteByte(':')
	b.WriteString(key)
	return b.String()
}

// ParseKey splits a key made by Key into its parts; ok is false for any
// other string (an unscoped key, written before keys were scoped).
func ParseKey(k string) (pipeline, tenant, key string, ok bool) {
	rest, found := strings.CutPrefix(k, scopePrefix)
	if !found {
		return "", "", "", false
	}
	if pipeline, rest, ok = lengthPrefixed(rest); !ok {
		return "", "", "", false
	}
	if tenant, rest, ok = lengthPrefixed(rest); !ok {
		return "", "", "", false
	}
	return pipeline, tenant, rest, true
}

// lengthPrefixed reads "<n>:<n bytes>:" off s.
func lengthPrefixed(s string) (part, rest string, ok bool) {
	digits, rest, found := strings.Cut(s, ":")
	if !found || digits == "" || len(digits) > 6 || (len(digits) > 1 && digits[0] == '0') {
		return "", "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n+1 > len(rest) || rest[n] != ':' {
		return "", "", false
	}
	return rest[:n], rest[n+1:], true
}

// Unscoped returns the key a task's entry had before keys were scoped (the
// bare idempotency key): k's key part, or k itself when k is not scoped.
func Unscoped(k string) string {
	if _, _, key, ok := ParseKey(k); ok {
		return key
	}
	return k
}

// exact is a Ledger's calls on keys as they are, without the fallback to
// unscoped entries: what Memory and Dynamo implement, and what
// WithUnscopedFallback takes from any Ledger.
type exact interface {
	beginExact(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error)
	getExact(ctx context.Context, key string) (Entry, bool, error)
	reconcileExact(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error)
	StartEffect(ctx context.Context, key, owner string, now time.Time) error
	Complete(ctx context.Context, key, owner, receipt string, now time.Time) error
	Release(ctx context.Context, key, owner string, now time.Time) error
}

// unsettled reports whether a scoped entry, as Begin found it, has not
// gone past its claim: no state, or in progress with no effect started and
// no receipt. Only then may the task's entry of before the upgrade (under
// its unscoped key) still say more than the scoped one.
func unsettled(e Entry) bool {
	return e.State == "" || e.State == StateInProgress && !e.EffectStarted && e.Receipt == "" && e.Reconciled == ""
}

// legacyApplies reports whether the unscoped entry old may speak for a task
// with args digest digest. An unscoped entry cannot say whose it was: any
// tenant of any pipeline may have written it. It is taken for this task's
// only when its digest is this task's (or either is unknown, as a done
// entry without a digest always was); one with another digest is another
// task's, which must not change this one's fate (it is neither a
// duplicate nor idempotency_key_reused).
func legacyApplies(old Entry, digest string) bool {
	return old.ArgsDigest == "" || digest == "" || old.ArgsDigest == digest
}

// beginScoped is Begin with the upgrade's fallback: a scoped key claimed
// while unsettled is checked against the task's unscoped entry, which the
// version before scoping wrote. A done one makes the task a no-op (ErrDone;
// the scoped entry is completed with its receipt, so that it need not be
// read again); one whose mutating call started without a receipt carries
// that mark over (StartEffect on the scoped key: the worker sees an unknown
// effect, and a reconciliation finds it on the scoped entry); one leased
// by a delivery of the version before gives the claim back (ErrLeased). The
// returned entry is then the unscoped one.
func beginScoped(ctx context.Context, l exact, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	before, err := l.beginExact(ctx, key, owner, digest, now, lease)
	if err != nil || !unsettled(before) {
		return before, err
	}
	_, _, raw, scoped := ParseKey(key)
	if !scoped {
		return before, nil
	}
	old, found, err := l.getExact(ctx, raw)
	if err != nil {
		_ = l.Release(ctx, key, owner, now)
		return Entry{}, err
	}
	if !found || !legacyApplies(old, digest) {
		return before, nil
	}
	before.RedriveCount = max(before.RedriveCount, old.RedriveCount)
	switch {
	case old.State == StateDone:
		if err := l.Complete(ctx, key, owner, old.Receipt, now); err != nil {
			return Entry{}, err
		}
		return old, ErrDone
	case old.State == StateInProgress && old.Owner != owner && now.Before(old.LeaseUntil):
		if err := l.Release(ctx, key, owner, now); err != nil {
			return Entry{}, err
		}
		return old, ErrLeased
	case old.EffectStarted && old.Receipt == "":
		if err := l.StartEffect(ctx, key, owner, now); err != nil {
			return Entry{}, err
		}
		before.State, before.EffectStarted = StateInProgress, true
		if old.State != StateInProgress {
			before.State = old.State
		}
		return before, nil
	}
	return before, nil
}

// getScoped is Get with the upgrade's fallback: a scoped key with no entry,
// or one that is only claimed, reads as its unscoped entry when that
// exists (Entry.Key then names the unscoped key, so a caller can tell).
func getScoped(ctx context.Context, l exact, key string) (Entry, bool, error) {
	e, found, err := l.getExact(ctx, key)
	if err != nil || found && !unsettled(e) {
		return e, found, err
	}
	_, _, raw, scoped := ParseKey(key)
	if !scoped {
		return e, found, nil
	}
	old, oldFound, err := l.getExact(ctx, raw)
	if err != nil {
		return Entry{}, false, err
	}
	if oldFound && (!found || !unsettled(old)) {
		return old, true, nil
	}
	return e, found, nil
}

// reconcileScoped is Reconcile with the upgrade's fallback: when the scoped
// key holds nothing to reconcile and the task's unscoped entry does (an
// effect left unknown by the version before scoping), that one is
// reconciled.
func reconcileScoped(ctx context.Context, l exact, key string, rc Reconciliation, now time.Time) (Entry, error) {
	e, err := l.reconcileExact(ctx, key, rc, now)
	if err == nil || !errors.Is(err, ErrNotEffectUnknown) {
		return e, err
	}
	if e.Key != "" && !unsettled(e) {
		return e, err
	}
	_, _, raw, scoped := ParseKey(key)
	if !scoped {
		return e, err
	}
	old, found, gerr := l.getExact(ctx, raw)
	if gerr != nil || !found || !old.EffectStarted && old.Reconciled == "" {
		return e, err
	}
	return l.reconcileExact(ctx, raw, rc, now)
}

// WithUnscopedFallback gives a Ledger of your own the upgrade's fallback
// that Memory and Dynamo have built in: Begin, Get and Reconcile of a
// scoped key (Key) also consult the task's entry under its unscoped key,
// as the version before scoping wrote it, so that a task done before the
// upgrade is still a no-op after it. l's own calls take keys as they are.
func WithUnscopedFallback(l Ledger) Ledger {
	if _, ok := l.(exact); ok {
		return l
	}
	return fallback{l}
}

type fallback struct{ Ledger }

func (f fallback) beginExact(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return f.Ledger.Begin(ctx, key, owner, digest, now, lease)
}

func (f fallback) getExact(ctx context.Context, key string) (Entry, bool, error) {
	return f.Ledger.Get(ctx, key)
}

func (f fallback) reconcileExact(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	return f.Ledger.Reconcile(ctx, key, rc, now)
}

func (f fallback) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return beginScoped(ctx, f, key, owner, digest, now, lease)
}

func (f fallback) Get(ctx context.Context, key string) (Entry, bool, error) {
	return getScoped(ctx, f, key)
}

func (f fallback) Reconcile(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	return reconcileScoped(ctx, f, key, rc, now)
}
