// Package load drives a server with the bench workload and measures it:
// Streamable HTTP from c concurrent clients, each on its own kept-alive
// connection, and stdio pipelined with a window of requests in flight.
// Every answer is checked (wire.Parse: the request's id, no error, one text
// block; then the text byte for byte), and the first failure ends the run
// with an error: a broken server never yields a rate.
package load

import (
	"fmt"
	"slices"
	"time"
)

// Phase is one run of a load: for a duration, or for an exact count of
// calls when Count is above zero.
type Phase struct {
	Duration time.Duration
	Count    int64
}

func (p Phase) String() string {
	if p.Count > 0 {
		return fmt.Sprintf("%d calls", p.Count)
	}
	return p.Duration.String()
}

// Watch names what to account for besides the load itself.
type Watch struct {
	// ServerPID is the server process whose CPU time is measured over the
	// phase; 0 means none.
	ServerPID int
}

// Result is one measured phase.
type Result struct {
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	// Latencies of the calls, in microseconds: from the request's write
	// (stdio: its stamp, just before it is buffered) to its answer's check.
	P50us float64 `json:"p50_us"`
	P90us float64 `json:"p90_us"`
	P99us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
	// Reconnects counts HTTP connections re-opened after the server closed
	// one (0 for a server that keeps connections alive).
	Reconnects int64 `json:"reconnects"`
	// CPU is the CPU accounting of the phase, when /proc could be read.
	CPU *CPU `json:"cpu,omitempty"`
}

// CPU accounts for the CPU time spent during a phase.
type CPU struct {
	// Server is the server process's CPU time (user + system), in seconds;
	// -1 when it was not measured.
	Server float64 `json:"serverSeconds"`
	// Load is this process's CPU time, in seconds.
	Load float64 `json:"loadSeconds"`
	// Busy is, per CPU, the fraction of the phase it was busy with any
	// process (from /proc/stat): what other work on the machine took shows
	// up here.
	Busy []float64 `json:"busy"`
	// Interrupts is, per CPU, the fraction of the phase spent in hard and
	// soft interrupts (loopback TCP is processed there), part of Busy and
	// charged to no process.
	Interrupts []float64 `json:"interrupts"`
}

// summarize turns the latencies of n calls over [start, end) into a Result.
func summarize(lat []time.Duration, start, end time.Time) Result {
	slices.Sort(lat)
	r := Result{Requests: int64(len(lat)), Seconds: end.Sub(start).Seconds()}
	if r.Seconds > 0 {
		r.RPS = float64(r.Requests) / r.Seconds
	}
	if len(lat) > 0 {
		us := func(q float64) float64 {
			i := int(q * float64(len(lat)-1))
			return float64(lat[i]) / float64(time.Microsecond)
		}
		r.P50us, r.P90us, r.P99us, r.MaxUs = us(0.50), us(0.90), us(0.99), us(1)
	}
	return r
}

// Median is the middle of xs (the mean of the two middle ones for an even
// count), 0 for none; xs is not reordered.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
