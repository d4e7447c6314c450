package ports

// AddressClass is the class of a client address in an audit record; the
// address itself is never recorded (docs/SPEC.md §5.3).
type AddressClass string

const (
	AddressLoopback AddressClass = "loopback"
	AddressPrivate  AddressClass = "private"
	AddressPublic   AddressClass = "public"
	AddressUnknown  AddressClass = "unknown"
)

// AuditRecord describes one refused request to the remote host. It never
// carries the token, a claim value or the address.
type AuditRecord struct {
	Refusal   RefusalReason
	Remote    AddressClass
	Throttled bool
}

// AuditSink receives one record per refused request. Audit must not block for
// long: it runs on the request path.
type AuditSink interface {
	Audit(AuditRecord)
}
