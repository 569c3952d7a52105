/*
 * server.h - the HTTP server of `cuscope view`: the viewer's files and its JSON API on 127.0.0.1,
 * behind a random token and a Host check (docs/commands/view.md).
 */
#ifndef CUSCOPE_VIEW_SERVER_H
#define CUSCOPE_VIEW_SERVER_H

#include <stdint.h>

#include "cuscope/error.h"

struct view_data;
struct view_server;

/* One file of viewer/, embedded at build time (view_assets.c, made by src/view/embed.py). */
struct view_asset {
	const char *path; /* "/index.html" */
	const char *type; /* Content-Type */
	const unsigned char *data;
	unsigned long size;
};
extern const struct view_asset view_assets[];
extern const unsigned long view_nassets;

/*
 * Listen on 127.0.0.1:port (0 = any free port) and serve v with token (32 hex characters) from a
 * thread of its own. *port_out: the port it listens on. 0, or a negative cs_err code.
 */
int view_server_start(struct view_data *v, int port, const char *token, struct view_server **out,
		      int *port_out, cs_error *err);
void view_server_stop(struct view_server *s);

#endif
