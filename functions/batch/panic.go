package batch

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// call runs the handler, turning a panic into that record's error.
func (p *Processor) call(ctx context.Context, rec Record) (err error) {
	defer func() {
		if v := recover(); v != nil {
			// The program counters only: runtime.Stack, which formats the
			// traceback at once, cost ~45 µs a panic (10% of the CPU of the
			// sqs-mixed bench); the frames are formatted for the log only.
			pe := &panicError{value: fmt.Sprint(v)}
			pe.pcs = pe.pcBuf[:runtime.Callers(3, pe.pcBuf[:])]
			err = pe
		}
	}()
	return p.handler(ctx, rec)
}

// panicError is a recovered panic: unclassified.
type panicError struct {
	value string
	pcs   []uintptr // the panicking goroutine's stack, innermost first
	pcBuf [32]uintptr
}

func (e *panicError) Error() string { return "panic: " + e.value }

// stack formats the frames as runtime.Stack lays them out ("function" then
// a tab and "file:line"), without the goroutine header and arguments.
//
// The text is kept by program counters: a bug that panics on many records
// panics at the same place each time, and formatting the frames (file and
// line lookups) cost ~5% of the sqs-mixed bench, where 1 record in 18
// panics. At most maxCachedStacks texts are kept; past that, stacks are
// formatted each time.
func (e *panicError) stack() string {
	key := stackKey{n: len(e.pcs)}
	copy(key.pcs[:], e.pcs)
	if s, ok := stackCache.Load(key); ok {
		return s.(string)
	}
	s := e.format()
	if stackCacheLen.Load() < maxCachedStacks {
		if _, loaded := stackCache.LoadOrStore(key, s); !loaded {
			stackCacheLen.Add(1)
		}
	}
	return s
}

// stackKey identifies a stack by its program counters.
type stackKey struct {
	n   int
	pcs [32]uintptr
}

const maxCachedStacks = 64

var (
	stackCache    sync.Map // stackKey → string
	stackCacheLen atomic.Int32
)

// callFunction is the frame name of (*Processor).call, where the frames
// that say something about a panic end: below it are the processor's own
// loop and the Lambda runtime, the same for every panic.
var callFunction = reflect.TypeFor[Processor]().PkgPath() + ".(*Processor).call"

// format formats the frames (see stack), from the panic down to the
// processor's call of the handler: a third of the text of the whole stack
// in the sample worker, and only the frames an operator reads.
func (e *panicError) format() string {
	var b strings.Builder
	frames := runtime.CallersFrames(e.pcs)
	for {
		f, more := frames.Next()
		b.WriteString(f.Function)
		b.WriteString("\n\t")
		b.WriteString(f.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
		b.WriteByte('\n')
		if !more || f.Function == callFunction {
			return b.String()
		}
	}
}
