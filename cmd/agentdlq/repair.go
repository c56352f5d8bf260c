package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// maxPatchBytes bounds a --patch file: a patch of a task's args, which fit
// in a message of at most 1 MiB.
const maxPatchBytes = 1 << 20

func newRedriveRepairCmd(f *redriveFlags) *cobra.Command {
	var (
		messageID, patchFile string
		dryRun               bool
		hold                 time.Duration
		out                  *output
	)
	c := &cobra.Command{
		Use:   "repair --pipeline NAME --message-id ID --patch FILE --owner WHO --why TEXT [--dry-run] [-o table|json]",
		Short: "Patch one dead letter's task args (RFC 6902 JSON Patch), keep the original, send the repaired task back",
		Long: `repair finds one dead letter in the DLQ (--message-id: its id in the DLQ,
as triage and the console list it, or the task's message id before it was
dead-lettered), applies the RFC 6902 JSON Patch in --patch FILE ("-" for
stdin) to the task's args (paths relative to args: /query, not
/args/query), checks the repaired task against the agent task contract
and the worker's tool catalog, and then:

  1. keeps the original (body, attributes, dlq_meta, the patch) in the eval
     bucket, s3://<eval bucket>/<pipeline>/repairs/<date>/<id>.json;
  2. audits the patch and the args' and bodies' SHA-256 before and after;
  3. sends the repaired task to the pipeline's own hot queue, under a key
     of its own (<key>~repair-<12 hex of the repaired args' SHA-256>: a
     key known with other args would be a reused key);
  4. deletes the dead letter, only after the send succeeded.

--dry-run does every check and prints the diff; nothing is sent, kept or
deleted (audited as a dry run).

Refused, and nothing changes (exit 2): not the owner, no why, a patch that
is not one, does not apply or changes nothing, a repaired task that breaks
the contract, a reason a patch does not repair (docs/reasons.md's patch
column: a security reason, redrive_loop, json_invalid, and a reason whose
args are not at fault), a mutating tool's task whose effect the ledger does not
settle as none (reconcile it as no effect first), and a message id the DLQ
does not hold (a rerun after a repair says when it was repaired). A DLQ
seen only in part exits 1 and says when to rerun.

Exit codes: 0 done, 1 failed, 2 refused or bad input (nothing changed).`,
		Example: `  cat > fix.json <<'JSON'
  [{"op":"replace","path":"/max_results","value":10}]
  JSON
  agentdlq redrive repair --pipeline agent-tasks --message-id 5742ed30-f981-4ab1-ae5b-1b616d43eff5 --patch fix.json --owner platform-oncall --why "planner sent max_results as a string (INC-88)" --dry-run
  agentdlq redrive repair --pipeline agent-tasks --message-id 5742ed30-f981-4ab1-ae5b-1b616d43eff5 --patch fix.json --owner platform-oncall --why "planner sent max_results as a string (INC-88)" -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			patch, err := readPatch(patchFile, cmd.InOrStdin())
			if err != nil {
				return f.refused(ctx, nil, audit.ActionRepair, who, &redrive.Refusal{Code: redrive.CodeBadInput, Field: "--patch", Reason: err.Error()})
			}
			r, err := f.open(ctx, audit.ActionRepair, who, nil)
			if err != nil {
				return err
			}
			res, err := r.Repair(ctx, redrive.RepairRequest{Who: who, MessageID: messageID, Patch: patch, Preview: dryRun, Hold: hold})
			switch {
			case errors.Is(err, redrive.ErrRefused) || res == nil || res.DLQMessageID == "":
				return err // nothing was done: the error alone
			case out.JSON() && err != nil:
				return withResult(err, res)
			case out.JSON():
				return writeJSON(cmd.OutOrStdout(), res)
			}
			writeRepairResult(cmd.OutOrStdout(), res)
			return err
		},
	}
	f.gateFlags(c, false, false)
	c.Flags().Lookup("why").Usage = "why this repair is right: what was wrong in the args, the incident (required)"
	c.Flags().StringVar(&messageID, "message-id", "", "the dead letter's message id in the DLQ (triage, the console), or the task's original message id (required)")
	c.Flags().StringVar(&patchFile, "patch", "", "file holding an RFC 6902 JSON Patch of the task's args, \"-\" for stdin (required)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check and print the diff; send, keep and delete nothing")
	c.Flags().StringVar(&f.evidenceBucket, "evidence-bucket", "", "the eval bucket, where the original is kept (default $AGENTDLQ_EVAL_BUCKET, the stack output EvalBucketName; agentdlq-evals with local endpoints)")
	c.Flags().DurationVar(&hold, "hold", redrive.DefaultHold, "visibility timeout of the dead letters received while looking for this one (released at the end)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

// readPatch reads --patch: a file, or stdin for "-".
func readPatch(name string, stdin io.Reader) ([]byte, error) {
	if name == "" {
		return nil, errors.New("is required: a file holding an RFC 6902 JSON Patch of the task's args (\"-\" for stdin)")
	}
	var r io.Reader = stdin
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("cannot be read: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPatchBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(b) > maxPatchBytes {
		return nil, fmt.Errorf("is larger than %d bytes", maxPatchBytes)
	}
	return b, nil
}

// writeRepairResult prints what a repair did (or would do), with the diff.
func writeRepairResult(w io.Writer, res *redrive.RepairResult) {
	verb := "repaired"
	if res.Preview {
		verb = "would repair"
	}
	fmt.Fprintf(w, "%s: %s dead letter %s (reason %s, tool %s, key %s)\n", res.Pipeline, verb, res.DLQMessageID, res.Reason, res.Tool, res.IdempotencyKey)
	fmt.Fprintf(w, "  args before  %s  sha256 %s\n", res.Before, short12(res.ArgsBeforeSHA256))
	fmt.Fprintf(w, "  args after   %s  sha256 %s\n", res.After, short12(res.ArgsAfterSHA256))
	fmt.Fprintf(w, "  patch        %s\n", res.Patch)
	fmt.Fprintf(w, "  new key      %s (the repaired task is another task)\n", res.RepairedKey)
	if res.Preview {
		fmt.Fprintln(w, "dry run: nothing sent, kept or deleted")
		return
	}
	fmt.Fprintf(w, "  original kept at %s\n  sent to the hot queue as %s, key %s; the dead letter is deleted\n", res.Evidence, res.HotMessageID, res.RepairedKey)
	if len(res.CopiesDeleted) > 0 {
		fmt.Fprintf(w, "  copies of it deleted from the DLQ: %s\n", strings.Join(res.CopiesDeleted, " "))
	}
	if res.CopiesLeft != "" {
		fmt.Fprintf(w, "  copies of it may stay in the DLQ: %s\n", res.CopiesLeft)
	}
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
