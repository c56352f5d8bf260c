// Package filterfield holds the names of triage.Filter's fields as the
// CLI's flags, the console's URL and the audit records spell them, for
// triage, cmd/agentdlq and console alike without triage exporting them.
package filterfield

// Names are the filter's fields (triage.Filter.Fields' keys), in the order
// a filter is written: triage.Filter.String, a command line's flags, the
// console's form.
var Names = []string{"tool", "tenant", "since", "until", "contains"}

// Error is a field's value that does not parse (triage.ParseFilter's
// error for a bad since or until): Field is one of Names, so that a caller
// can name its own flag or parameter without reading the message.
type Error struct {
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
