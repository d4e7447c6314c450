package fake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentmcp/agentmcp/ports"
)

// Features is a fixed set of server features for tests (docs/SPEC.md §2):
// resources fake://text (text/plain "hello") and fake://blob (image/png,
// bytes 0x89 'P' 'N' 'G'), the template fake://items/{id} (any id of
// digits; "text/plain" "item <id>"), Pages more resources fake://page/<n>
// when set (cursor tests), the prompts greet {name (required)} and
// picture (no arguments, an image), and completion of greet's name from
// "alice", "bob", "bobby". An unknown URI is [ports.ErrResourceNotFound].
// Subscriptions are to the URIs a read accepts, with the same errors;
// nothing changes by itself: [Features.Update] reports a change.
type Features struct {
	Pages int
	// Panic, when set, makes every method panic (recovery tests).
	Panic bool

	mu   sync.Mutex
	subs map[string]map[*func()]bool // uri → the updated callbacks held
}

// Ports returns f as the four ports.
func (f *Features) Ports() ports.Features {
	return ports.Features{Resources: f, Prompts: f, Completer: f, Subscriber: f}
}

// SubscribeResource holds updated for uri until cancel, when a read of
// uri would succeed; otherwise it fails as ReadResource does.
func (f *Features) SubscribeResource(ctx context.Context, uri string, p ports.Principal, updated func()) (func(), error) {
	if _, err := f.ReadResource(ctx, uri, p); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = make(map[string]map[*func()]bool)
	}
	if f.subs[uri] == nil {
		f.subs[uri] = make(map[*func()]bool)
	}
	key := &updated
	f.subs[uri][key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs[uri], key)
			if len(f.subs[uri]) == 0 {
				delete(f.subs, uri)
			}
		})
	}, nil
}

// Update reports a change of uri to every subscription held for it and
// returns how many there were.
func (f *Features) Update(uri string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for cb := range f.subs[uri] {
		(*cb)()
	}
	return len(f.subs[uri])
}

// Subscriptions returns how many subscriptions are held, over every URI.
func (f *Features) Subscriptions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.subs {
		n += len(m)
	}
	return n
}

var pngBytes = []byte{0x89, 'P', 'N', 'G'}

func (f *Features) check() {
	if f.Panic {
		panic("fake features: told to panic")
	}
}

func (f *Features) ListResources(context.Context, ports.Principal) ([]ports.Resource, error) {
	f.check()
	list := []ports.Resource{
		{URI: "fake://text", Name: "text", MIMEType: "text/plain", Size: 5},
		{URI: "fake://blob", Name: "blob", Title: "A picture", MIMEType: "image/png", Size: -1},
	}
	for i := range f.Pages {
		list = append(list, ports.Resource{URI: "fake://page/" + strconv.Itoa(i), Name: "page " + strconv.Itoa(i), Size: -1})
	}
	return list, nil
}

func (f *Features) ResourceTemplates(context.Context, ports.Principal) ([]ports.ResourceTemplate, error) {
	f.check()
	return []ports.ResourceTemplate{{URITemplate: "fake://items/{id}", Name: "item", Description: "one item by its number", MIMEType: "text/plain"}}, nil
}

func (f *Features) ReadResource(_ context.Context, uri string, _ ports.Principal) ([]ports.ResourceContents, error) {
	f.check()
	switch {
	case uri == "fake://text":
		return []ports.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "hello"}}, nil
	case uri == "fake://blob":
		return []ports.ResourceContents{{URI: uri, MIMEType: "image/png", Blob: pngBytes}}, nil
	case strings.HasPrefix(uri, "fake://items/"):
		id := strings.TrimPrefix(uri, "fake://items/")
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return nil, ports.Refused(fmt.Sprintf("item id %q is not a number", id))
		}
		return []ports.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "item " + id}}, nil
	}
	return nil, ports.ErrResourceNotFound
}

func (f *Features) ListPrompts(context.Context, ports.Principal) ([]ports.Prompt, error) {
	f.check()
	return []ports.Prompt{
		{Name: "greet", Description: "Greets someone", Arguments: []ports.PromptArgument{{Name: "name", Description: "who", Required: true}}},
		{Name: "picture", Title: "Picture", Description: "Shows a picture"},
	}, nil
}

func (f *Features) GetPrompt(_ context.Context, name string, args map[string]string, _ ports.Principal) (ports.PromptResult, error) {
	f.check()
	switch name {
	case "greet":
		who, ok := args["name"]
		if !ok {
			return ports.PromptResult{}, fmt.Errorf("%w: prompt greet needs the argument name", ports.ErrInvalidPrompt)
		}
		return ports.PromptResult{Description: "A greeting", Messages: []ports.PromptMessage{
			{Role: "user", Content: ports.PromptContent{Type: "text", Text: "Say hello to " + who + "."}},
			{Role: "user", Content: ports.PromptContent{Type: "resource", Resource: &ports.ResourceContents{URI: "fake://text", MIMEType: "text/plain", Text: "hello"}}},
		}}, nil
	case "picture":
		return ports.PromptResult{Messages: []ports.PromptMessage{
			{Role: "user", Content: ports.PromptContent{Type: "image", Data: pngBytes, MIMEType: "image/png"}},
		}}, nil
	}
	return ports.PromptResult{}, fmt.Errorf("%w: unknown prompt %q", ports.ErrInvalidPrompt, name)
}

func (f *Features) Complete(_ context.Context, req ports.CompletionRequest, _ ports.Principal) (ports.Completion, error) {
	f.check()
	if req.RefType != "ref/prompt" || req.Name != "greet" || req.Argument != "name" {
		return ports.Completion{}, fmt.Errorf("%w: nothing to complete for %s %s", ports.ErrInvalidPrompt, req.Name, req.Argument)
	}
	var out []string
	for _, v := range []string{"alice", "bob", "bobby"} {
		if strings.HasPrefix(v, req.Value) {
			out = append(out, v)
		}
	}
	return ports.Completion{Values: out, Total: len(out)}, nil
}
