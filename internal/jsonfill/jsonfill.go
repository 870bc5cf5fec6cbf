// Package jsonfill fills a value's every JSON-visible field, for tests that
// check a document type converts every field of the record it mirrors
// (plan's document, the state and journal documents).
package jsonfill

import (
	"encoding/json"
	"reflect"
	"time"
)

// Fill sets every exported field that encoding/json writes to a non-zero
// value: strings "x", numbers 1 (1.5), true, one element per slice and map
// (key "k"), a fixed time. Pointers are followed maxDepth deep, which bounds
// recursive types (a server's deposed server). Maps of interfaces are left
// alone: their shape is the caller's (sensitivity marks).
func Fill(v reflect.Value, maxDepth int) { fill(v, 0, maxDepth) }

func fill(v reflect.Value, depth, maxDepth int) {
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"ok":true}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth > maxDepth {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1, maxDepth)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth, maxDepth)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth, maxDepth)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Interface {
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth, maxDepth)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), depth, maxDepth)
			}
		}
	}
}
