package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// SyntaxError is a definition that does not decode: not JSON, JSON of the
// wrong shape (an array where the file must be an object, a string where a
// number belongs), or empty. Its message says where and what is expected;
// Unwrap gives encoding/json's error.
type SyntaxError struct {
	// Line and Column locate the problem (1-based), when known.
	Line, Column int
	// Field is the dotted JSON path of a value of the wrong type
	// ("pipelines.max_receive_count"); empty for the document itself.
	Field string
	// Msg says what is wrong and what is expected.
	Msg string
	err error
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return e.Msg
}

func (e *SyntaxError) Unwrap() error { return e.err }

// decodeError turns what encoding/json says about data into a SyntaxError
// that names the place and what is expected there (doc describes the whole
// document: `an object {"version": 1, "pipelines": [...]}`). An unknown
// field keeps encoding/json's words, which already name it.
func decodeError(data []byte, err error, doc string) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return &SyntaxError{Msg: "the file is empty: it must hold " + doc, err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, int64(len(data)))
		return &SyntaxError{Line: line, Column: col, Msg: "the JSON ends early (an unclosed { or [ or string?): it must hold " + doc, err: err}
	case errors.As(err, &se):
		line, col := position(data, se.Offset)
		return &SyntaxError{Line: line, Column: col, Msg: "not valid JSON: " + se.Error(), err: err}
	case errors.As(err, &te):
		line, col := position(data, te.Offset)
		if te.Field == "" {
			return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("the definition is %s; it must be %s", jsonValue(te.Value), doc), err: err}
		}
		return &SyntaxError{Line: line, Column: col, Field: te.Field,
			Msg: fmt.Sprintf("%s is %s; it must be %s", te.Field, jsonValue(te.Value), kind(te.Type)), err: err}
	}
	return err
}

// position is the 1-based line and column of byte offset off of data.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// jsonValue names the JSON value encoding/json describes as v ("array",
// "bool", "number 1.5"): "an array", "a boolean", "a number 1.5".
func jsonValue(v string) string {
	switch v {
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + v
	}
	return "a " + v
}

// kind says what a Go type is in JSON's words.
func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return kind(t.Elem())
	}
	return "a " + t.String()
}
