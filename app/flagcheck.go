package app

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Flag checks: every bad flag or combination of flags is a usage error
// (exit 2, one screen: usageError), found before anything is opened, bound
// or logged. A flag's check lives in one of three places:
//
//   - its value: a flag registered with intFlag, durationFlag or a
//     flag.Value whose Set returns the reason (portValue, logLevel,
//     listenAddr) fails as the command line is parsed, and the flag
//     package's error becomes the usage error (flagError);
//   - a relation with other flags (needs, excludes): one flagRule in the
//     command's or its group's rules, checked once the flags are parsed;
//   - anything else derived from the flags alone (a model endpoint URL, the
//     remote host's identity): the command's run, before it opens the
//     session (serveFlags.check, remoteFlags.check).
//
// An unknown flag gets the nearest known one (didYouMean) or the command's
// own hint (command.hints); nothing else needs writing for a new flag.

// intFlag registers an int or int64 flag whose value must be at least min.
func intFlag[T int | int64](fs *flag.FlagSet, name string, value, min T, usage string) *T {
	p := new(T)
	*p = value
	fs.Var(&intValue[T]{p: p, min: min}, name, usage)
	return p
}

type intValue[T int | int64] struct {
	p   *T
	min T
}

func (v *intValue[T]) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v *intValue[T]) Get() any { return *v.p }

func (v *intValue[T]) Set(s string) error {
	bits := 64
	if _, isInt := any(*v.p).(int); isInt {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(s, 10, bits)
	switch {
	case err != nil:
		return errors.New("want a whole number")
	case T(n) < v.min:
		return fmt.Errorf("must be at least %d", v.min)
	}
	*v.p = T(n)
	return nil
}

// durationFlag registers a duration flag whose value must be at least min
// and, when max > 0, at most max.
func durationFlag(fs *flag.FlagSet, name string, value, min, max time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = value
	fs.Var(&durationValue{p: p, min: min, max: max}, name, usage)
	return p
}

type durationValue struct {
	p        *time.Duration
	min, max time.Duration
}

func (v *durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

func (v *durationValue) Get() any { return *v.p }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New(durationWanted)
	case d < v.min && v.min <= time.Nanosecond:
		return errors.New("must be more than 0")
	case d < v.min:
		return fmt.Errorf("must be at least %s", shortDuration(v.min))
	case v.max > 0 && d > v.max:
		return fmt.Errorf("must be at most %s", shortDuration(v.max))
	}
	*v.p = d
	return nil
}

// shortDuration is d as people write it: 30m, not 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

const durationWanted = "want a duration such as 90s, 5m or 1h"

// portValue is a TCP port: 0 picks a free one.
type portValue int

func (p *portValue) String() string { return strconv.Itoa(int(*p)) }
func (p *portValue) Get() any       { return int(*p) }

func (p *portValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return errors.New("a port is a whole number from 0 to 65535 (0 picks a free one)")
	}
	*p = portValue(n)
	return nil
}

// logLevel is --log-level: one of slog's four level names.
type logLevel struct{ level *slog.Level }

func (l logLevel) String() string {
	if l.level == nil {
		return ""
	}
	return strings.ToLower(l.level.String())
}

func (l logLevel) Get() any { return *l.level }

func (l logLevel) Set(s string) error {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return l.level.UnmarshalText([]byte(s))
	}
	return errors.New("the levels are debug, info, warn and error")
}

// flagRule is a relation between the flags of one command, checked once
// its command line is parsed: when any of flags is given, needs must be
// given too (when set) and excludes must not be (when set). why ends the
// usage error.
type flagRule struct {
	flags    []string
	needs    string
	excludes string
	why      string
}

// check returns the usage error of a broken rule, or "".
func (r flagRule) check(given map[string]bool) string {
	for _, name := range r.flags {
		switch {
		case !given[name]:
		case r.needs != "" && !given[r.needs]:
			return fmt.Sprintf("--%s needs --%s: %s", name, r.needs, r.why)
		case r.excludes != "" && given[r.excludes]:
			return fmt.Sprintf("--%s and --%s exclude each other: %s", name, r.excludes, r.why)
		}
	}
	return ""
}

// givenFlags is the set of flags given on fs's command line with a value
// that turns something on: a bool flag given false (--ephemeral=false) or a
// flag given the empty string (--token-file "") is what leaving it out
// means, so a rule reads it as not given.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if v := f.Value.String(); v != "" && !(isBool(f) && v == "false") {
			given[f.Name] = true
		}
	})
	return given
}

// isBool reports whether f is a bool flag (one that takes no value).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagWritten reports whether name was written on fs's command line, with
// any value.
func flagWritten(fs *flag.FlagSet, name string) bool {
	written := false
	fs.Visit(func(f *flag.Flag) { written = written || f.Name == name })
	return written
}

// didYouMean returns the name among names nearest to unknown by edit
// distance, when it is near enough to be a misspelling (at most a third of
// its letters, and at least 1, differ), or "".
func didYouMean(unknown string, names []string) string {
	best, bestD := "", max(1, len(unknown)/3)+1
	for _, n := range names {
		if abs(len(unknown)-len(n)) >= bestD {
			continue // at least that far apart: not worth the distance's len(unknown)×len(n) steps (a 1 MB flag name)
		}
		if d := editDistance(unknown, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the edit distance between a and b, in bytes: the
// insertions, deletions, substitutions and swaps of two neighbours
// (optimal string alignment) that turn one into the other.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
