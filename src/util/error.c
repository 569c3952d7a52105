/* error.c - cs_error helpers shared by every cuscope library. */
#include <stdarg.h>
#include <stdio.h>

#include "cuscope/error.h"

int cs_error_set(cs_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *cs_err_str(int code)
{
	switch (code) {
	case CS_OK:
		return "success";
	case CS_ERR_IO:
		return "input/output error";
	case CS_ERR_NOT_FOUND:
		return "no such file";
	case CS_ERR_NOT_SQLITE:
		return "not an SQLite database";
	case CS_ERR_NOT_TRACE:
		return "not a cuscope trace";
	case CS_ERR_NEWER_SCHEMA:
		return "written by a newer cuscope";
	case CS_ERR_CORRUPT:
		return "truncated or damaged";
	case CS_ERR_NOMEM:
		return "out of memory";
	case CS_ERR_SQL:
		return "database error";
	case CS_ERR_EXISTS:
		return "file exists";
	case CS_ERR_INVALID:
		return "invalid argument";
	}
	return "unknown error";
}
