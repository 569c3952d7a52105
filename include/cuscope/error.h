/*
 * error.h - error codes and one-line messages shared by the cuscope libraries.
 *
 * Library functions return 0 (CS_OK) or a negative cs_err code and, where they take a cs_error,
 * fill it with a one-line message (lower case, no final full stop) that the CLI prints as it is.
 */
#ifndef CUSCOPE_ERROR_H
#define CUSCOPE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum cs_err {
	CS_OK = 0,
	CS_ERR_IO = -1,		  /* read/write failure */
	CS_ERR_NOT_FOUND = -2,	  /* no such file */
	CS_ERR_NOT_SQLITE = -3,	  /* the file is not an SQLite database */
	CS_ERR_NOT_TRACE = -4,	  /* SQLite, but not a cuscope trace */
	CS_ERR_NEWER_SCHEMA = -5, /* written by a newer cuscope */
	CS_ERR_CORRUPT = -6,	  /* truncated or damaged */
	CS_ERR_NOMEM = -7,
	CS_ERR_SQL = -8,      /* unexpected SQLite error */
	CS_ERR_EXISTS = -9,   /* output exists and overwriting was not asked for */
	CS_ERR_INVALID = -10, /* bad argument */
};

#define CS_ERROR_MSG_MAX 512

typedef struct cs_error {
	int code;
	char msg[CS_ERROR_MSG_MAX];
} cs_error;

/* Set err (when not NULL) to code and a printf-style message; returns code. */
int cs_error_set(cs_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A short generic description of a code. */
const char *cs_err_str(int code);

#ifdef __cplusplus
}
#endif
#endif
