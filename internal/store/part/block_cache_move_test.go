package part

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestMoveHeaderKeepsTemplates: a header moved into the cache's memory
// has templates equal to the parsed ones, every field: the scalars
// moveHeader copies one by one (a field added to template and left out
// there fails it) and the views pointTemplates sets.
func TestMoveHeaderKeepsTemplates(t *testing.T) {
	p := &blockHeader{
		holes: []int{0, 1, 0},
		slots: []slot{{field: 0, flags: slotInLine}, {field: 1, flags: slotInLine}, {field: 0, flags: slotInLine}},
		cols:  []int32{3, 4, 5},
		line:  []byte(`{"a":,"b":}`),
		ends:  []uint32{5, 10, 11, 0, 0},
	}
	p.tmpls = make([]template, 2)
	// Every scalar field of both templates set (not its zero value), by
	// reflection, so that none can be left out unseen.
	for k := range p.tmpls {
		v := reflect.ValueOf(&p.tmpls[k]).Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			switch f.Kind() {
			case reflect.Bool:
				setField(f, reflect.ValueOf(true))
			case reflect.Uint64, reflect.Uint32, reflect.Uint8, reflect.Int, reflect.Int32:
				setField(f, reflect.ValueOf(uint64(k+7)).Convert(f.Type()))
			case reflect.Array: // Shape
				for j := range f.Len() {
					setField(f.Index(j), reflect.ValueOf(uint64(k*10+j+1)).Convert(f.Index(j).Type()))
				}
			case reflect.Slice, reflect.Struct: // the views, set below
			default:
				t.Fatalf("template field %s of kind %s: teach this test to set it", v.Type().Field(i).Name, f.Kind())
			}
		}
		p.tmpls[k].raw = false
	}
	p.tmpls[0].slots, p.tmpls[0].cols, p.tmpls[0].holes = p.slots[:2], p.cols[:2], p.holes[:2]
	p.tmpls[0].gaps = Gaps{line: p.line[:11], ends: p.ends[:3]}
	p.tmpls[1].slots, p.tmpls[1].cols, p.tmpls[1].holes = p.slots[2:], p.cols[2:], p.holes[2:]
	p.tmpls[1].gaps = Gaps{line: p.line[11:], ends: p.ends[3:]}
	c := NewBlockCache(1 << 20)
	h := c.moveHeader(p)
	defer c.retire(unsafe.SliceData(h.region))
	for k := range p.tmpls {
		if !reflect.DeepEqual(h.tmpls[k], p.tmpls[k]) {
			t.Errorf("template %d moved:\n%+v\nparsed:\n%+v", k, h.tmpls[k], p.tmpls[k])
		}
	}
}

// setField sets f, unexported, to v.
func setField(f, v reflect.Value) {
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(v)
}
