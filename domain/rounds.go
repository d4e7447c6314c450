package domain

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"
)

// RoundBinding is what a parked input-required round is bound to (docs/SPEC.md §6):
// who may resume it and with which request. Principal is the remote
// principal (issuer, subject, client), the loopback host, or the stdio
// stream; Tool and ArgsDigest are the tools/call's name and the SHA-256 of
// its arguments' normal form (ArgumentsDigest).
type RoundBinding struct {
	Principal  string
	Tool       string
	ArgsDigest [32]byte
}

// Round bounds (docs/SPEC.md §6).
const (
	MaxRoundsPerHost      = 64
	MaxRoundsPerPrincipal = 4
	MaxRoundLifetime      = 30 * time.Minute
)

var (
	// ErrRoundsFull: the host has as many parked rounds as allowed; the new
	// prompt settles closed at once.
	ErrRoundsFull = errors.New("too many parked rounds")
	// ErrUnknownRound covers every requestState that cannot resume a round:
	// unknown, used, expired, minted elsewhere, or bound to another
	// principal, tool or arguments. Clients see one answer (-32602).
	ErrUnknownRound = errors.New("unknown or expired requestState")
)

// Rounds is the store of parked input-required rounds. Tokens are 32 random
// bytes, base64url, handed to the client as requestState and stored only as
// their SHA-256; each resumes at most one retry. The clock and the random
// source are the caller's. Safe for concurrent use.
type Rounds[T any] struct {
	lifetime time.Duration
	random   io.Reader

	mu      sync.Mutex // guards the fields below
	byHash  map[[32]byte]*round[T]
	perUser map[string]int
	seq     uint64 // parks so far: orders the rounds, oldest first
}

type round[T any] struct {
	binding RoundBinding
	expires time.Time
	seq     uint64
	value   T
}

// NewRounds returns an empty store whose rounds live for lifetime (0 or more
// than 30 minutes means 30 minutes), drawing tokens from random.
func NewRounds[T any](lifetime time.Duration, random io.Reader) *Rounds[T] {
	if lifetime <= 0 || lifetime > MaxRoundLifetime {
		lifetime = MaxRoundLifetime
	}
	return &Rounds[T]{lifetime: lifetime, random: random, byHash: map[[32]byte]*round[T]{}, perUser: map[string]int{}}
}

// Lifetime is how long a parked round waits for its retry.
func (s *Rounds[T]) Lifetime() time.Duration { return s.lifetime }

// Park stores value under a fresh token bound to b, valid until now plus the
// lifetime. When b's principal already has 4 rounds, its oldest is removed
// to make room and returned as evicted (the caller settles it closed): a
// principal only ever evicts its own (docs/SPEC.md §6). It fails with
// ErrRoundsFull when the host has 64 rounds (after that eviction, if any:
// a principal at its own bound always makes room), or when the random
// source fails; a failure evicts nothing.
func (s *Rounds[T]) Park(b RoundBinding, now time.Time, value T) (token string, evicted []T, err error) {
	var raw [32]byte
	if _, err := io.ReadFull(s.random, raw[:]); err != nil {
		return "", nil, err
	}
	token = base64.RawURLEncoding.EncodeToString(raw[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perUser[b.Principal] >= MaxRoundsPerPrincipal {
		var oldest *round[T]
		var oldestHash [32]byte
		for h, r := range s.byHash {
			if r.binding.Principal == b.Principal && (oldest == nil || r.seq < oldest.seq) {
				oldest, oldestHash = r, h
			}
		}
		s.remove(oldestHash, oldest)
		evicted = append(evicted, oldest.value)
	}
	if len(s.byHash) >= MaxRoundsPerHost {
		return "", nil, ErrRoundsFull
	}
	s.seq++
	s.byHash[sha256.Sum256([]byte(token))] = &round[T]{binding: b, expires: now.Add(s.lifetime), seq: s.seq, value: value}
	s.perUser[b.Principal]++
	return token, evicted, nil
}

// Take resumes the round of token: it checks the binding and the expiry and,
// when both hold, removes the round and returns its value. An expired round
// is removed; a mismatched binding leaves the round in place (a failed check
// does not use it up). Every failure is ErrUnknownRound.
func (s *Rounds[T]) Take(token string, b RoundBinding, now time.Time) (T, error) {
	var zero T
	h := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byHash[h]
	if !ok {
		return zero, ErrUnknownRound
	}
	if !now.Before(r.expires) {
		return zero, ErrUnknownRound // the sweeper settles it
	}
	if !sameBinding(r.binding, b) {
		return zero, ErrUnknownRound
	}
	s.remove(h, r)
	return r.value, nil
}

func sameBinding(a, b RoundBinding) bool {
	return subtle.ConstantTimeCompare([]byte(a.Principal), []byte(b.Principal)) == 1 &&
		a.Tool == b.Tool && a.ArgsDigest == b.ArgsDigest
}

func (s *Rounds[T]) remove(h [32]byte, r *round[T]) {
	delete(s.byHash, h)
	if s.perUser[r.binding.Principal]--; s.perUser[r.binding.Principal] <= 0 {
		delete(s.perUser, r.binding.Principal)
	}
}

// Expire removes and returns the values of every round expired at now.
func (s *Rounds[T]) Expire(now time.Time) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for h, r := range s.byHash {
		if !now.Before(r.expires) {
			s.remove(h, r)
			out = append(out, r.value)
		}
	}
	return out
}

// Drain removes and returns every round (Stop settles them closed).
func (s *Rounds[T]) Drain() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.byHash))
	for h, r := range s.byHash {
		s.remove(h, r)
		out = append(out, r.value)
	}
	return out
}

// Len is the number of parked rounds.
func (s *Rounds[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byHash)
}

// ArgumentsDigest is the SHA-256 of the normal form of arguments, so that
// two texts of one value (another key order, other spacing, other escapes)
// bind the same round: object keys sorted, no insignificant whitespace,
// strings quoted with strconv.Quote, numbers exactly as written (2.5 and
// 2.50 differ). The form is hashed, never parsed or sent, so it need not be
// JSON and is not: Go's quoting is not JSON's, and it is not RFC 8785
// canonical JSON either. ok is false when arguments is not valid JSON.
func ArgumentsDigest(arguments json.RawMessage) (digest [32]byte, ok bool) {
	var b bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(arguments))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return digest, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return digest, false
	}
	writeNormalForm(&b, v)
	return sha256.Sum256(b.Bytes()), true
}

// writeNormalForm writes ArgumentsDigest's normal form of v (a value
// decoded with json.Decoder.UseNumber).
func writeNormalForm(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeNormalForm(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeNormalForm(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(string(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	}
}

// RemoveIf removes and returns the values of the rounds for which match
// holds (a stdio client cancelling the request that parked them).
func (s *Rounds[T]) RemoveIf(match func(T) bool) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for h, r := range s.byHash {
		if match(r.value) {
			s.remove(h, r)
			out = append(out, r.value)
		}
	}
	return out
}
