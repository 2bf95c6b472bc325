package serve

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The chat page in headless Chromium: a question typed and sent comes back as a streamed
// answer in the page (growing over several DOM updates), equal to the API's answer to the same
// conversation. It runs against GORUN_SERVE_URL when set (CI: a `gorun -n 2 llm serve`), else
// against an in-process server at TP = 2. The page asks for the API key when the server wants
// one (GORUN_SERVE_KEY for the external server; the in-process one always has one). Without
// Chromium it skips, unless GORUN_REQUIRE_BROWSER=1 (CI installs it).
func TestChatPageInBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("GORUN_REQUIRE_BROWSER") == "1" {
			t.Fatal("no chromium on PATH and GORUN_REQUIRE_BROWSER=1")
		}
		t.Skip("no chromium on PATH")
	}
	ts := &testServer{client: defaultTestClient()}
	external := os.Getenv("GORUN_SERVE_URL")
	key := os.Getenv("GORUN_SERVE_KEY")
	if external != "" {
		ts.url = external
	} else {
		// Slow steps (about 0.5 s for the whole answer), so that the page reads the stream in
		// many pieces rather than all at once; an API key, which the page asks for.
		key = testKey
		ts = startServer(t, serverOpts{ranks: 2, cfg: Config{APIKey: key}, setup: func(rank int, s *Server) {
			s.eng.beforeStep = func() { time.Sleep(4 * time.Millisecond) }
		}})
	}
	if key != "" {
		ts.client.Transport = withKey{ts.client.Transport, key}
	}
	const question = "Tell me a story about a cat."
	code, _, body := ts.post(t, "/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": question}}, "temperature": 0})
	var want completion
	if code != 200 || json.Unmarshal(body, &want) != nil {
		t.Fatalf("API answer: %d %s", code, body)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(ts.url+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		err = chromedp.Do(ctx,
			chromedp.WaitVisible(chromedp.ID("apikey")),
			chromedp.SendKeys(chromedp.ID("apikey"), key),
			chromedp.Click(chromedp.ID("usekey")),
		)
		if err != nil {
			t.Fatalf("API key field: %v", err)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("model").textContent.includes("TP=")`)); err != nil {
		t.Fatalf("model list: %v", err)
	}
	model, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("model")))
	if err != nil {
		t.Fatal(err)
	}
	// Count the changes to the answer's text as they stream in.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.updates = 0; new MutationObserver(() => window.updates++).observe(
		document.getElementById("messages"), {childList: true, subtree: true, characterData: true}); true`)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("temperature"), "0"),
		chromedp.SendKeys(chromedp.ID("input"), question),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(`.assistant[data-done="1"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".assistant")))
	if err != nil {
		t.Fatal(err)
	}
	updates, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.updates`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("page header %q; answer %q after %d DOM updates", model, answer, updates)
	if answer != want.Choices[0].Message.Content {
		t.Errorf("page shows %q, the API answered %q", answer, want.Choices[0].Message.Content)
	}
	if answer == "" {
		t.Error("no answer in the page")
	}
	// An external server may answer faster than the page reads; only the slowed one must
	// show the answer growing.
	if external == "" && updates < 4 {
		t.Errorf("the answer arrived in %d DOM updates: not streamed", updates)
	}
}
