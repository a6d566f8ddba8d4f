//go:build !linux

package appmain

import "errors"

func residentPages(b []byte) (int, error) {
	return 0, errors.New("mincore is Linux's")
}
