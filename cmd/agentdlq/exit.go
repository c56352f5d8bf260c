package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentdlq/agentdlq/internal/textutil"

	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
)

// The exit codes of every agentdlq command.
const (
	exitOK           = 0 // done
	exitFailed       = 1 // failed
	exitRefused      = 2 // refused by the gate or the policy, or bad input: nothing moved
	exitCanaryFailed = 3 // the canary failed: the rest was not moved
)

// Stable codes of the "code" field of a JSON error (-o json), besides the
// redrive refusal codes (redrive.Code), which are used as they are.
const (
	codeBadInput       = "bad_input"
	codeUnknownCommand = "unknown_command"
	codeUnknownProfile = "unknown_profile"
	codeRefused        = "refused"
	codeCanaryFailed   = "canary_failed"
	codeInterrupted    = "interrupted"
	codeFailed         = "failed"
	codeNotFound       = "not_found"
)

// exitError carries a process exit code with its error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit wraps err so that main exits with code.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageError is bad input found by the command line itself: an unknown
// command, a flag that does not parse, a missing argument.
type usageError struct {
	code string
	err  error
	// help is the command whose --help the message points to.
	help string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func badUsage(c *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return &usageError{code: codeBadInput, err: err, help: c.CommandPath()}
}

// notFoundError is what was asked for by name and does not exist (a ledger
// key): exit 2, code not_found, and no pointer to --help (the command line
// was well formed).
type notFoundError struct{ err error }

func (e *notFoundError) Error() string { return e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }

// resultError is an error that comes with a result worth printing (what a
// refused or failed selective redrive saw): with -o json both are one
// document, {"error":…,"code":…,"result":…}.
type resultError struct {
	err    error
	result any
}

func (e *resultError) Error() string { return e.err.Error() }
func (e *resultError) Unwrap() error { return e.err }

func withResult(err error, result any) error {
	if err == nil {
		return nil
	}
	return &resultError{err: err, result: result}
}

// classify is the one place that maps an error to its exit code and its
// stable code: a refusal's own code (exit 2), canary_failed (exit 3),
// bad_input, unknown_command and not_found (exit 2), failed (exit 1).
func classify(err error) (code string, exit int) {
	if err == nil {
		return "", exitOK
	}
	if c := redrive.RefusalCode(err); c != "" {
		return string(c), exitRefused
	}
	var ue *usageError
	var nf *notFoundError
	var pe config.SharedConfigProfileNotExistError
	var ee *exitError
	switch {
	case errors.Is(err, redrive.ErrCanaryFailed):
		return codeCanaryFailed, exitCanaryFailed
	case errors.Is(err, triage.ErrScanPartial):
		// Not the operator's input: the scan missed held letters; retry.
		return string(redrivetype.CodeScanPartial), exitFailed
	case errors.Is(err, redrive.ErrRefused):
		return codeRefused, exitRefused
	case errors.As(err, &ue):
		return ue.code, exitRefused
	case errors.As(err, &nf):
		return codeNotFound, exitRefused
	case errors.As(err, &pe):
		return codeUnknownProfile, exitRefused
	case errors.As(err, &ee):
		switch ee.code {
		case exitRefused:
			return codeBadInput, exitRefused
		case exitCanaryFailed:
			return codeCanaryFailed, exitCanaryFailed
		}
		return codeFailed, ee.code
	case cobraUsage(err):
		return codeBadInput, exitRefused
	case errors.Is(err, context.Canceled):
		return codeInterrupted, exitFailed
	}
	return codeFailed, exitFailed
}

// cobraUsage reports whether err is one of the errors cobra returns for a
// command line it cannot accept (required flags, flag groups, arguments),
// which it does not type.
func cobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"required flag(s) ", "if any flags in the group ", "at least one of the flags in the group ", "accepts ", "requires at least ", "requires at most ", "unknown command ", "invalid argument ", "unknown flag: ", "unknown shorthand flag: ", "flag needs an argument: "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// exitCode is the process exit code of err.
func exitCode(err error) int {
	_, exit := classify(err)
	return exit
}

// jsonError is what a failed command prints with -o json.
type jsonError struct {
	Error    string `json:"error"`
	Code     string `json:"code"`
	ExitCode int    `json:"exit_code"`
	// Next are a refusal's next steps (redrive.Refusal.Next) as data, each
	// with its command line when the pipeline is known.
	Next   []jsonStep `json:"next,omitempty"`
	Result any        `json:"result,omitempty"`
	// Hint says why a command could not reach AWS or the emulators, and
	// what to run (reachHint).
	Hint string `json:"hint,omitempty"`
}

// jsonStep is one next step of a JSON error: the library's step
// (action, reason, fingerprint, canary, needs) and the command that takes it.
type jsonStep struct {
	redrivetype.Step
	Command string `json:"command,omitempty"`
}

// nextOf are the next steps err carries: those the CLI told in flags (with
// their pipeline, so with commands), else a refusal's own.
func nextOf(err error) []jsonStep {
	var steps []redrivetype.Step
	var fe *flagError
	var rf *redrive.Refusal
	switch {
	case errors.As(err, &fe) && len(fe.next) > 0:
		steps = fe.next
	case errors.As(err, &rf):
		steps = rf.Next
	}
	out := make([]jsonStep, 0, len(steps))
	for _, s := range steps {
		js := jsonStep{Step: s}
		if fe != nil && fe.p != nil {
			js.Command = stepCommand(fe.p, s)
		}
		out = append(out, js)
	}
	return out
}

// reportExit prints err for the command c that ran (or failed to parse) and
// returns the process exit code. With -o json (or --json) on the command
// line the error is one JSON object on
// stdout ({"error","code","exit_code"}, a refusal's "next" steps and, when
// the command had one, the "result"); otherwise it is "agentdlq: <error>" on stderr, with a pointer
// to --help when the command line itself was wrong.
func reportExit(c *cobra.Command, err error, stdout, stderr io.Writer) int {
	code, exit := classify(err)
	if err == nil {
		return exit
	}
	if outputOf(c).errorJSON() {
		je := jsonError{Error: err.Error(), Code: code, ExitCode: exit, Next: nextOf(err), Hint: reachHint(err)}
		var re *resultError
		if errors.As(err, &re) {
			je.Result = re.result
		}
		if werr := writeJSON(stdout, je); werr == nil {
			return exit
		}
	}
	// An error may quote a message (a key, a tool name): its controls are
	// shown escaped, its own line breaks kept.
	fmt.Fprintln(stderr, "agentdlq:", textutil.EscapeBlock(strings.TrimRight(err.Error(), "\n")))
	if hint := reachHint(err); hint != "" {
		fmt.Fprintln(stderr, "agentdlq: hint:", textutil.Escape(hint))
	}
	help := ""
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		help = ue.help
	case cobraUsage(err) && c != nil:
		help = c.CommandPath()
	}
	if help != "" {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", help)
	}
	return exit
}

// unknownCommand is the error of a command line naming a subcommand that
// c does not have, with cobra's suggestions.
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, c.CommandPath())
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return &usageError{code: codeUnknownCommand, err: errors.New(msg), help: c.CommandPath()}
}

// flagSuggestions are the flags of c (its own and those it inherits) whose
// name is within two edits of typed or starts with it, as "--name": what
// cobra's suggestions do for commands, which it does not do for flags.
func flagSuggestions(c *cobra.Command, typed string) []string {
	var out []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		if editDistance(strings.ToLower(typed), f.Name) <= c.SuggestionsMinimumDistance || (len(typed) > 1 && strings.HasPrefix(f.Name, typed)) {
			out = append(out, "--"+f.Name)
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	sort.Strings(out)
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// harden applies the exit-code conventions to every command under root:
// a command with subcommands prints its help when called bare (exit 0, as
// kubectl and gh do) and refuses an unknown subcommand with exit 2 and
// suggestions (cobra would print the help and exit 0); a flag that does not
// parse, a wrong number of arguments or a missing required flag is bad
// input (exit 2).
func harden(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		// agentdlq help NAME…: cobra says "Unknown help topic" and exits 0.
		help := c.Run
		c.Run = nil
		c.RunE = func(c *cobra.Command, args []string) error {
			if found, rest, err := root.Find(args); err == nil && found != nil && len(rest) > 0 {
				return unknownCommand(found, rest[0])
			}
			help(c, args)
			return nil
		}
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var fe *formatError
		if errors.As(err, &fe) {
			err = fe // pflag's "invalid argument "true" for "--markdown" flag: " says nothing more
		}
		var ne *pflag.NotExistError
		if errors.As(err, &ne) {
			// "agentdlq redriv plan --pipeline x": no command is named
			// redriv, so cobra parsed the rest as the root's flags. The
			// first word is what is wrong, not the flag of the command meant.
			if args := c.Flags().Args(); c.HasSubCommands() && len(args) > 0 {
				return unknownCommand(c, args[0])
			}
			if s := flagSuggestions(c, ne.GetSpecifiedName()); ne.GetSpecifiedShortnames() == "" && len(s) > 0 {
				// As cobra's own suggestions, ending in a line break.
				err = fmt.Errorf("%w\n\nDid you mean this?\n\t%s\n", err, strings.Join(s, "\n\t")) //nolint:staticcheck // ST1005: see above
			}
		}
		return badUsage(c, err)
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		switch {
		case c.HasSubCommands() && !c.Runnable():
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(c, args[0])
				}
				return nil
			}
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		case c.Runnable():
			args := c.Args
			if args == nil {
				args = cobra.ArbitraryArgs
			}
			c.Args = func(c *cobra.Command, a []string) error { return badUsage(c, args(c, a)) }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
