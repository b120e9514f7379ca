package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// defaultAPIURL is the server's default listen address.
const defaultAPIURL = "http://127.0.0.1:3100"

// rcName is the per-user configuration file in the home directory.
const rcName = ".pgmrc"

// config is the resolved connection configuration.
type config struct {
	URL     string
	Key     string
	URLFrom string // where URL came from, for messages
	KeyFrom string // where Key came from ("" when no key is configured)
}

// rcFile is the JSON shape of ~/.pgmrc.
type rcFile struct {
	APIURL string `json:"api_url"`
	APIKey string `json:"api_key"`
}

// config resolves the API URL and key: flag, else environment, else
// ~/.pgmrc, else the default URL (and no key). ~/.pgmrc is read only when
// a setting is still missing after the flags and the environment.
func (a *app) config() (*config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	c := &config{}
	pick := func(dst, from *string, flagName, flagVal, env string) {
		switch {
		case strings.TrimSpace(flagVal) != "":
			*dst, *from = strings.TrimSpace(flagVal), "--"+flagName
		case strings.TrimSpace(a.getenv(env)) != "":
			*dst, *from = strings.TrimSpace(a.getenv(env)), env
		}
	}
	pick(&c.URL, &c.URLFrom, "api-url", a.apiURL, "PGM_API_URL")
	pick(&c.Key, &c.KeyFrom, "api-key", a.apiKey, "PGM_API_KEY")
	if c.URL == "" || c.Key == "" {
		rc, path, err := a.readRC()
		if err != nil {
			return nil, err
		}
		if c.URL == "" && strings.TrimSpace(rc.APIURL) != "" {
			c.URL, c.URLFrom = strings.TrimSpace(rc.APIURL), path
		}
		if c.Key == "" && strings.TrimSpace(rc.APIKey) != "" {
			c.Key, c.KeyFrom = strings.TrimSpace(rc.APIKey), path
		}
	}
	if c.URL == "" {
		c.URL, c.URLFrom = defaultAPIURL, "the default"
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, usageErr("invalid API URL %q (from %s): want http(s)://host[:port]", c.URL, c.URLFrom)
	}
	c.URL = strings.TrimRight(c.URL, "/")
	a.cfg = c
	return c, nil
}

// home is the user's home directory from the environment run was given.
func (a *app) home() string {
	if h := a.getenv("HOME"); h != "" {
		return h
	}
	if runtime.GOOS == "windows" {
		return a.getenv("USERPROFILE")
	}
	return ""
}

// readRC reads ~/.pgmrc. A missing file (or home) is an empty config; a
// file others can read draws a warning on stderr.
func (a *app) readRC() (rcFile, string, error) {
	var rc rcFile
	home := a.home()
	if home == "" {
		return rc, "", nil
	}
	path := filepath.Join(home, rcName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rc, path, nil
	}
	if err != nil {
		return rc, path, usageErr("cannot read %s: %v", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && runtime.GOOS != "windows" {
		if perm := fi.Mode().Perm(); perm&0o044 != 0 {
			fmt.Fprintf(a.stderr, "warning: %s is readable by group or others (mode %04o) and may hold an API key; run: chmod 600 %s\n", path, perm, path)
		}
	}
	dec := json.NewDecoder(f)
	if err := dec.Decode(&rc); err != nil {
		return rc, path, usageErr("cannot read %s: not valid JSON like {\"api_url\": \"...\", \"api_key\": \"...\"}: %v", path, err)
	}
	return rc, path, nil
}
