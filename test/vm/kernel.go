package vm

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Kernel is a bootable kernel image and its module directory.
type Kernel struct {
	// Image is the vmlinuz file.
	Image string
	// Version is the release (uname -r), e.g. 6.1.0-28-cloud-amd64.
	Version string
	// ModulesDir is <root>/lib/modules/<Version> (/lib/modules/<Version>
	// for a kernel installed on the host).
	ModulesDir string
}

// KernelPattern matches Debian's cloud kernel below a root directory; it
// boots fast and has what containers need built in or as modules.
const KernelPattern = "boot/vmlinuz-*-cloud-amd64"

// PrivateKernelRoot is where test/setup.sh unpacks the kernel package when
// the host does not have it installed: a root of its own (boot/ and
// lib/modules/), so the host never boots it.
const PrivateKernelRoot = "/var/cache/skiff-vm/kernel"

// DefaultKernelRoots are searched for KernelPattern: the host's own root
// and PrivateKernelRoot.
var DefaultKernelRoots = []string{"/", PrivateKernelRoot}

// FindKernel returns the kernel at image, or (image == "") the newest one
// matching KernelPattern below any of roots. The module directory is
// <root>/lib/modules/<version>, where <root> is the directory above the
// image's boot/ (so /boot/vmlinuz-V uses /lib/modules/V), and must hold a
// modules.dep. Reads the file system only.
func FindKernel(image string, roots []string) (Kernel, error) {
	if image == "" {
		var matches []string
		for _, root := range roots {
			m, err := filepath.Glob(filepath.Join(root, KernelPattern))
			if err != nil {
				return Kernel{}, fmt.Errorf("find kernel: %w", err)
			}
			matches = append(matches, m...)
		}
		if len(matches) == 0 {
			return Kernel{}, fmt.Errorf("no kernel matches %s below %s: install linux-image-cloud-amd64 (test/setup.sh)",
				KernelPattern, strings.Join(roots, ", "))
		}
		sort.SliceStable(matches, func(i, j int) bool {
			return versionLess(filepath.Base(matches[i]), filepath.Base(matches[j]))
		})
		image = matches[len(matches)-1]
	}
	if _, err := os.Stat(image); err != nil {
		return Kernel{}, fmt.Errorf("kernel image: %w", err)
	}
	version := strings.TrimPrefix(filepath.Base(image), "vmlinuz-")
	if version == filepath.Base(image) || version == "" {
		return Kernel{}, fmt.Errorf("kernel image %s: name is not vmlinuz-<version>", image)
	}
	root := filepath.Dir(filepath.Dir(image))
	k := Kernel{Image: image, Version: version, ModulesDir: filepath.Join(root, "lib", "modules", version)}
	if _, err := os.Stat(filepath.Join(k.ModulesDir, "modules.dep")); err != nil {
		return Kernel{}, fmt.Errorf("modules of kernel %s: %w", version, err)
	}
	return k, nil
}

// versionLess orders strings by their runs of digits numerically and the
// rest bytewise, so 6.1.0-10 sorts after 6.1.0-9.
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, ra := digitPrefix(a)
		db, rb := digitPrefix(b)
		if da != "" && db != "" {
			na, _ := strconv.ParseUint(da, 10, 64)
			nb, _ := strconv.ParseUint(db, 10, 64)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// Modules is the module index of a kernel: modules.dep and modules.builtin.
type Modules struct {
	// Dir is the module directory (/lib/modules/<version>).
	Dir string
	// deps maps a module's relative path to the paths it depends on
	// (modules.dep order: direct and indirect, the farthest last).
	deps map[string][]string
	// byName maps a module name (dashes as underscores) to its path.
	byName map[string]string
	// builtin holds the names of modules compiled into the kernel.
	builtin map[string]bool
}

// moduleName turns kernel/net/bridge/br_netfilter.ko(.xz) or
// "br-netfilter" into "br_netfilter".
func moduleName(s string) string {
	s = path.Base(s)
	if i := strings.Index(s, ".ko"); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "-", "_")
}

// LoadModules reads modules.dep and modules.builtin from dir.
func LoadModules(dir string) (*Modules, error) {
	m := &Modules{Dir: dir, deps: map[string][]string{}, byName: map[string]string{}, builtin: map[string]bool{}}
	err := eachLine(filepath.Join(dir, "modules.dep"), func(line string) error {
		mod, deps, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("modules.dep: malformed line %q", line)
		}
		m.deps[mod] = strings.Fields(deps)
		m.byName[moduleName(mod)] = mod
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "modules.builtin"), func(line string) error {
		m.builtin[moduleName(line)] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// eachLine calls fn for every non-empty line of file.
func eachLine(file string, fn func(string) error) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("read module index: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if err := fn(line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	return nil
}

// Resolve returns, for the named modules, the module files to load in load
// order (dependencies first, each once), the names that are built into the
// kernel, and the names that exist neither way.
func (m *Modules) Resolve(names []string) (load, builtin, missing []string) {
	seen := map[string]bool{}
	var visit func(mod string)
	visit = func(mod string) {
		if seen[mod] {
			return
		}
		seen[mod] = true
		// modules.dep lists all transitive dependencies; visiting each
		// one's own list orders them without relying on that order.
		for _, d := range m.deps[mod] {
			visit(d)
		}
		load = append(load, mod)
	}
	for _, n := range names {
		name := moduleName(n)
		switch mod, ok := m.byName[name]; {
		case ok:
			visit(mod)
		case m.builtin[name]:
			builtin = append(builtin, name)
		default:
			missing = append(missing, name)
		}
	}
	return load, builtin, missing
}

// UnderDirs returns the module files below the given directories relative
// to the module directory (e.g. "kernel/net/netfilter"), sorted.
func (m *Modules) UnderDirs(dirs []string) []string {
	var out []string
	for mod := range m.deps {
		for _, d := range dirs {
			if strings.HasPrefix(mod, strings.TrimSuffix(d, "/")+"/") {
				out = append(out, mod)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Closure returns mods plus every module they depend on, sorted.
func (m *Modules) Closure(mods []string) []string {
	set := map[string]bool{}
	for _, mod := range mods {
		set[mod] = true
		for _, d := range m.deps[mod] {
			set[d] = true
		}
	}
	out := make([]string, 0, len(set))
	for mod := range set {
		out = append(out, mod)
	}
	sort.Strings(out)
	return out
}

// depFile renders a modules.dep restricted to mods (which must be closed
// under dependencies), so that modprobe in the guest finds exactly them.
func (m *Modules) depFile(mods []string) []byte {
	var b strings.Builder
	for _, mod := range mods {
		b.WriteString(mod)
		b.WriteString(":")
		for _, d := range m.deps[mod] {
			b.WriteString(" ")
			b.WriteString(d)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// aliasFile renders the lines of modules.alias whose module is one of mods,
// so that the kernel's on-demand loading (request_module, e.g. of
// "nft-chain-2-nat") works for the modules in the guest.
func (m *Modules) aliasFile(mods []string) ([]byte, error) {
	names := map[string]bool{}
	for _, mod := range mods {
		names[moduleName(mod)] = true
	}
	var b strings.Builder
	err := eachLine(filepath.Join(m.Dir, "modules.alias"), func(line string) error {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "alias" && names[moduleName(f[2])] {
			b.WriteString(line)
			b.WriteString("\n")
		}
		return nil
	})
	return []byte(b.String()), err
}
