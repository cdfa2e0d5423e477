package record

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// fillDistinct sets every member of the struct v points to, nested
// structs included, to a distinct non-zero value, and returns the members'
// paths. Blank members (padding) are left alone: no code reads them.
func fillDistinct(t *testing.T, v reflect.Value) []string {
	t.Helper()
	var paths []string
	next := uint64(0)
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		if !v.CanSet() {
			// An unexported member: set it all the same.
			v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.Name != "_" {
					fill(v.Field(i), path+"."+f.Name)
				}
			}
			return
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			next++
			v.SetInt(int64(next))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			next++
			v.SetUint(next)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.String:
			next++
			v.SetString(fmt.Sprint("s", next))
		default:
			t.Fatalf("%s: fillDistinct does not know kind %s: teach it", path, v.Kind())
		}
		paths = append(paths, path)
	}
	fill(v.Elem(), v.Elem().Type().Name())
	return paths
}

// member returns the member of v at path (as fillDistinct names them).
func member(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".")[1:] {
		v = v.FieldByName(name)
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// TestBuilderCopiesEveryMember guards the member-by-member copies of
// Builder.Add (Field) and Builder.End (Record), which a struct copy would
// make slower (see Add): every member, set to a distinct non-zero value,
// must come out of the builder unchanged, so a member added to Field or
// Record that the copies miss fails here rather than reading as zero.
func TestBuilderCopiesEveryMember(t *testing.T) {
	bl := NewBuilder(DefaultConfig())
	b := &Batch{Data: []byte("first line|second line"), ReceiveTime: 1}
	bl.Start(b)
	bl.Name([]byte("first"))
	name, ok := bl.Name([]byte("plain")) // a name with no role: Add only copies it
	if !ok || name == 0 {
		t.Fatalf("name id %d, %v: want a non-zero id", name, ok)
	}
	// A first record, so that the second's FieldStart is not zero.
	bl.Begin(Span{0, 10})
	bl.Add(Field{Name: name, Kind: String, Raw: Span{0, 5}})
	bl.End()

	t.Run("Field", func(t *testing.T) {
		var f Field
		paths := fillDistinct(t, reflect.ValueOf(&f))
		f.Name = name // must name an interned name, with no role
		bl.Begin(Span{11, 11})
		bl.Add(f)
		bl.End()
		got := b.Fields[len(b.Fields)-1]
		for _, p := range paths {
			g, w := member(reflect.ValueOf(&got).Elem(), p), member(reflect.ValueOf(&f).Elem(), p)
			if w.IsZero() {
				t.Fatalf("%s: zero in the input, so this test cannot see it copied", p)
			}
			if !g.Equal(w) {
				t.Errorf("%s: got %v, want %v: Builder.Add does not copy it; add it to the member-by-member copy in builder.go (Add)", p, g, w)
			}
		}
	})

	t.Run("Record", func(t *testing.T) {
		bl.Begin(Span{11, 11})
		bl.Add(Field{Name: name, Kind: String, Raw: Span{11, 6}})
		// SetTime and SetMsg keep End from choosing a time and a message;
		// no field names a stream, so End keeps Stream as well.
		bl.SetTime(1)
		bl.SetMsg(Span{11, 6}, 0)
		start := bl.rec.FieldStart
		paths := fillDistinct(t, reflect.ValueOf(&bl.rec))
		bl.rec.FieldStart = start // End computes NumFields from it
		bl.End()
		want := bl.rec // what End copied from
		got := b.Records[len(b.Records)-1]
		if want.NumFields != 1 || want.FieldStart == 0 {
			t.Fatalf("record FieldStart %d NumFields %d: want both non-zero", want.FieldStart, want.NumFields)
		}
		for _, p := range paths {
			g, w := member(reflect.ValueOf(&got).Elem(), p), member(reflect.ValueOf(&want).Elem(), p)
			if w.IsZero() {
				t.Fatalf("%s: zero in the record End copies, so this test cannot see it copied", p)
			}
			if !g.Equal(w) {
				t.Errorf("%s: got %v, want %v: Builder.End does not copy it; add it to the member-by-member copy in builder.go (End)", p, g, w)
			}
		}
	})
}
