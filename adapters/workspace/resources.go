package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/ports"
)

// ResourceURIs says how the workspace serves its files as MCP resources
// (docs/SPEC.md §2): not at all (the zero value, so a library user opts
// in), as file:// URIs, or as agentmcp://workspace/ URIs.
type ResourceURIs int

const (
	// NoResources serves no resources: tools only.
	NoResources ResourceURIs = iota
	// FileURIs serves every file under the root through the template
	// file://<root>/{+path}, <root> the root's absolute path with links
	// resolved: for the local carriers, whose client runs on this host.
	FileURIs
	// WorkspaceURIs serves them through agentmcp://workspace/{+path}: for
	// serve remote, whose clients never learn the server's paths
	// (docs/SPEC.md §9).
	WorkspaceURIs
)

// resources is the session's [ports.Resources]: one URI template over the
// root, read through read_file's own reader (readRegular), so a resource
// read has read_file's refusals and bound exactly.
type resources struct {
	s *Session
	// prefix is what every URI of a file starts with, the relative path
	// following it; template is the RFC 6570 template; dir the decoded
	// path a file:// URI's path starts with (the root's, then "/").
	prefix, template, dir string
	kind                  ResourceURIs
	// rootPath is the root's absolute path with links resolved, under
	// which a subscribed file's directory is watched.
	rootPath string
}

func newResources(s *Session, kind ResourceURIs, rootPath string) *resources {
	r := &resources{s: s, kind: kind, rootPath: rootPath}
	switch kind {
	case FileURIs:
		r.dir = rootPath + "/"
		r.prefix = (&url.URL{Scheme: "file", Path: rootPath + "/"}).String()
		if !strings.HasPrefix(r.prefix, "file:///") { // url.URL writes file:/// for a path with an empty host
			r.prefix = "file://" + strings.TrimPrefix(r.prefix, "file:")
		}
	case WorkspaceURIs:
		r.prefix = "agentmcp://workspace/"
	}
	r.template = r.prefix + "{+path}"
	return r
}

// Features reports the workspace's resources and their subscriptions when
// [Options.Resources] asks for them ([ports.ServerFeatures]); none
// otherwise.
func (s *Session) Features() ports.Features {
	if s.res == nil {
		return ports.Features{}
	}
	return ports.Features{Resources: s.res, Subscriber: s.res}
}

// ListResources lists no concrete resource: the files are the template's
// (a listing of the whole tree would be unbounded); a client reads them
// through it, or finds them with find_files.
func (r *resources) ListResources(context.Context, ports.Principal) ([]ports.Resource, error) {
	return []ports.Resource{}, nil
}

func (r *resources) ResourceTemplates(context.Context, ports.Principal) ([]ports.ResourceTemplate, error) {
	return []ports.ResourceTemplate{{
		URITemplate: r.template,
		Name:        "workspace-file",
		Title:       "Workspace file",
		Description: "A file of the agent's workspace, by its path relative to the workspace root; at most 1 MiB, read as read_file reads it",
	}}, nil
}

// ReadResource reads the file uri names (docs/SPEC.md §2): text with its
// MIME type when it is UTF-8 and not an image, audio or video type,
// otherwise a blob. A URI of another scheme or host, or outside the root,
// is not found; a query or fragment, a traversal in any spelling (".."
// plain or percent-encoded, an absolute path after the prefix), a NUL, a
// link leading out of the root, a directory, FIFO or device, a file over
// [MaxReadBytes] are refusals. Nothing is read for any of them.
func (r *resources) ReadResource(ctx context.Context, uri string, _ ports.Principal) ([]ports.ResourceContents, error) {
	p, err := r.path(uri)
	if err != nil {
		return nil, err
	}
	data, err := r.s.readRegular(ctx, p, "a resource read")
	if err != nil {
		return nil, readRefusal(err)
	}
	mt := mime.TypeByExtension(path.Ext(p.display))
	binaryType := strings.HasPrefix(mt, "image/") && mt != "image/svg+xml" ||
		strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "video/")
	c := ports.ResourceContents{URI: uri, MIMEType: mt}
	if utf8.Valid(data) && !binaryType {
		if c.MIMEType == "" {
			c.MIMEType = "text/plain; charset=utf-8"
		}
		c.Text = string(data)
	} else {
		if c.MIMEType == "" {
			c.MIMEType = "application/octet-stream"
		}
		c.Blob = data
	}
	return []ports.ResourceContents{c}, nil
}

// SubscribeResource watches the file uri names (docs/SPEC.md §2
// "Subscriptions"): updated is called, UpdateCoalesce after its first
// change, each time the file is written, created or renamed onto its name,
// removed or renamed away. The file must be one a read would return: the
// same refusals and bound (nothing is read), and a symbolic link as its
// last component is refused too, since the watch is on its directory and
// would not see the target change. Its directory is opened through the
// root and watched by its path under the root's resolved path, which must
// still name that very directory once it is watched.
func (r *resources) SubscribeResource(_ context.Context, uri string, _ ports.Principal, updated func()) (func(), error) {
	p, err := r.path(uri)
	if err != nil {
		return nil, err
	}
	if err := r.s.subscribable(p); err != nil {
		return nil, err
	}
	dir := filepath.Dir(p.name)
	d, err := r.s.root.Open(dir)
	if err != nil {
		return nil, readRefusal(fsError(p, err))
	}
	st, err := d.Stat()
	d.Close()
	if err != nil {
		return nil, readRefusal(fsError(p, err))
	}
	same := func(now fs.FileInfo) bool { return os.SameFile(st, now) }
	return r.s.watches.watch(filepath.Join(r.rootPath, dir), filepath.Base(p.name), same, updated)
}

// subscribable refuses p as a read would, and as a link.
func (s *Session) subscribable(p relPath) error {
	f, err := s.openReadable(p, "a resource read")
	if err != nil {
		return readRefusal(err)
	}
	f.Close()
	if st, err := s.root.Lstat(p.name); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return ports.Refused(fmt.Sprintf("%q is a symbolic link: subscribe to the file it names", p.display))
	}
	return nil
}

// readRefusal maps a read's error to the port's: a missing file is not
// found, anything else a refusal.
func readRefusal(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ports.ErrResourceNotFound, err)
	}
	return ports.Refused(err.Error())
}

// path is the root-relative path uri names, checked as a path argument is
// (cleanPath).
func (r *resources) path(uri string) (relPath, error) {
	if !strings.HasPrefix(uri, r.prefix) {
		return relPath{}, fmt.Errorf("%w: %s is not a file of this workspace (its files are %s)", ports.ErrResourceNotFound, clip(uri), r.template)
	}
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return relPath{}, ports.Refused("the URI is malformed: " + err.Error())
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(uri, "?#"):
		return relPath{}, ports.Refused("a workspace file's URI has no query or fragment")
	}
	rel := strings.TrimPrefix(u.Path, "/")
	if r.kind == FileURIs {
		if !strings.HasPrefix(u.Path, r.dir) {
			return relPath{}, fmt.Errorf("%w: %s is not a file of this workspace", ports.ErrResourceNotFound, clip(uri))
		}
		rel = u.Path[len(r.dir):]
	}
	p, err := cleanPath(rel)
	if err != nil {
		return relPath{}, ports.Refused(err.Error())
	}
	return p, nil
}

// clip shortens a client's URI for a message.
func clip(uri string) string {
	if len(uri) > 200 {
		return uri[:200] + "…"
	}
	return uri
}

// resolvedRoot is root's absolute path with links resolved.
func resolvedRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
