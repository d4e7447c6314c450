package load

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the kernel's USER_HZ, the unit of /proc's CPU times: 100 on
// every Linux architecture Go supports.
const userHZ = 100

// cpuMeter samples CPU times at a phase's start and end.
type cpuMeter struct {
	pid               int
	server0           float64
	self0             float64
	busy0, irq0, all0 []uint64
	ok                bool
}

func startCPU(w Watch) *cpuMeter {
	m := &cpuMeter{pid: w.ServerPID, server0: -1}
	busy, irq, all, err := procStat()
	if err != nil {
		return m
	}
	m.busy0, m.irq0, m.all0, m.ok = busy, irq, all, true
	m.self0 = selfCPU()
	if m.pid > 0 {
		if s, err := pidCPU(m.pid); err == nil {
			m.server0 = s
		}
	}
	return m
}

func (m *cpuMeter) stop() *CPU {
	if !m.ok {
		return nil
	}
	busy, irq, all, err := procStat()
	if err != nil || len(busy) != len(m.busy0) {
		return nil
	}
	c := &CPU{Server: -1, Load: selfCPU() - m.self0}
	for i := range busy {
		var b, q float64
		if d := all[i] - m.all0[i]; d > 0 {
			b = float64(busy[i]-m.busy0[i]) / float64(d)
			q = float64(irq[i]-m.irq0[i]) / float64(d)
		}
		c.Busy, c.Interrupts = append(c.Busy, b), append(c.Interrupts, q)
	}
	if m.server0 >= 0 {
		if s, err := pidCPU(m.pid); err == nil {
			c.Server = s - m.server0
		}
	}
	return c
}

// procStat returns, per CPU, the busy, interrupt (irq and softirq) and
// total jiffies of /proc/stat (busy is everything but idle and iowait).
func procStat() (busy, irq, all []uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "cpu") || strings.HasPrefix(line, "cpu ") {
			continue
		}
		fields := strings.Fields(line)[1:]
		// user nice system idle iowait irq softirq steal [guest guest_nice]
		var total, idle, intr uint64
		for i, s := range fields {
			if i >= 8 { // guest and guest_nice are already in user and nice
				break
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, nil, nil, err
			}
			total += v
			switch i {
			case 3, 4: // idle, iowait
				idle += v
			case 5, 6: // irq, softirq
				intr += v
			}
		}
		busy, irq, all = append(busy, total-idle), append(irq, intr), append(all, total)
	}
	if len(all) == 0 {
		return nil, nil, nil, fmt.Errorf("no cpu lines in /proc/stat")
	}
	return busy, irq, all, sc.Err()
}

// pidCPU returns a process's user + system CPU time in seconds.
func pidCPU(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: fields count
	// from after the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return float64(ut+st) / userHZ, nil
}

// selfCPU returns this process's user + system CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
