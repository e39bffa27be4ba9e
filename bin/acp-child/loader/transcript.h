/* SPDX-License-Identifier: ISC */
/*
 * transcript.h: fast index of a qwen-code JSONL session transcript.
 *
 * One read() pass in 1 MiB chunks finds each line, a string-aware scanner
 * pulls the top-level keys (uuid, parentUuid, sessionId, type, subtype) and
 * json-c is used only for lines the scanner cannot handle.  Only the index
 * (about 60-90 bytes per record) is kept in memory, never the file.
 *
 * Thread rules: a struct transcript is used by one thread at a time; no
 * globals, no static buffers.
 */
#ifndef QWEN_ACP_TRANSCRIPT_H
#define QWEN_ACP_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* json-c nesting limit for every record parse (the loader's and the projection's). */
#define TX_JSON_DEPTH	1024

enum tx_type { TX_USER = 1, TX_ASSISTANT, TX_TOOL_RESULT, TX_SYSTEM };

struct tx_stats {
	uint64_t bytes;              /* bytes indexed (whole lines only; a torn tail is not counted) */
	uint64_t records;            /* valid records (after recovery, before duplicate merge) */
	uint64_t malformed_lines;    /* non-blank lines that are not one JSON value
	                                (the reference loader's definition: glued and
	                                torn lines count, a valid JSON non-record does not) */
	uint64_t recovered_records;  /* records recovered from `}{`-glued lines */
	uint64_t duplicates;         /* records whose uuid was seen before (merged as fragments) */
};

struct transcript;

/* Index path; records must carry sessionId == session_id (NULL: basename of path without .jsonl).
   NULL + *cause (caller frees) on open/read failure; ENOENT keeps errno so callers can map it to -32002. */
struct transcript *transcript_open(const char *path, const char *session_id, char **cause);
/* Index bytes appended since the last pass (a torn tail is re-read once completed).
   Detects truncation/replacement (size shrank or inode changed) and returns -1 with a cause. */
int transcript_refresh(struct transcript *, char **cause);
void transcript_free(struct transcript *);                 /* NULL-safe */
const struct tx_stats *transcript_stats(const struct transcript *);
uint64_t transcript_size(const struct transcript *);        /* bytes of whole lines indexed so far */
const char *transcript_path(const struct transcript *);

/* Logical records (duplicates merged: first occurrence gives parent/type/subtype). */
size_t transcript_count(const struct transcript *);
enum tx_type transcript_type(const struct transcript *, uint32_t rec);
const char *transcript_subtype(const struct transcript *, uint32_t rec);  /* interned; "" when none */
void transcript_uuid(const struct transcript *, uint32_t rec, char out[64]);
/* Sum of the raw bytes of all fragments of rec. */
uint64_t transcript_raw_len(const struct transcript *, uint32_t rec);
/* Parse rec with json-c (all fragments merged per upstream rules: message.parts concatenated,
   usageMetadata last wins, timestamp max). Caller puts. NULL + cause on I/O or parse failure;
   errno is EBADMSG when the bytes are there but json-c does not accept them. */
json_object *transcript_load_record(struct transcript *, uint32_t rec, char **cause);
/* The raw bytes of rec when it is one fragment: 1 and *bytes (valid until
   the next call on t), 0 when it has several, -1 + cause on I/O failure. */
int transcript_record_bytes(struct transcript *, uint32_t rec, const char **bytes,
    size_t *len, char **cause);
/* The records transcript_record_bytes will be asked for next, in order
   (recs borrowed until the next call; NULL ends it and frees the buffer):
   runs of them lying back to back in the file are read with one pread. */
void transcript_read_ahead(struct transcript *, const uint32_t *recs, size_t n);
/* Find a record by uuid; -1 if absent. */
int64_t transcript_find(const struct transcript *, const char *uuid);

/* Index details used by chain.c, replay.c and inspect.c (additions to the shared API). */
#define TX_F_CONVERSATION	0x01	/* not session_artifact_*, session_sources_snapshot, managed_session_* */
#define TX_F_MESSAGE		0x02	/* first fragment has a non-empty message object */
#define TX_F_ROLE_USER		0x04	/* ... whose role is "user" */
unsigned transcript_flags(const struct transcript *, uint32_t rec);
/* Parent of rec among the indexed conversation records: 1 and *parent when found,
   0 when parentUuid is null/absent/empty (a root), -1 when missing (a gap). */
int transcript_parent(const struct transcript *, uint32_t rec, uint32_t *parent);
/* Last conversation record in file order, -1 if none. */
int64_t transcript_leaf(const struct transcript *);
/* The uuid of rec without length limit: points into buf (binary uuids, formatted) or
   into the index (other strings; valid until the next refresh). *len set. */
const char *transcript_uuid_ref(const struct transcript *, uint32_t rec, char buf[37], size_t *len);
/* Bytes after the last indexed newline (a torn or still-being-written last line). */
uint64_t transcript_pending_bytes(const struct transcript *);

/* Set *cause to a formatted message (caller frees; NULL cause: ignored). */
void transcript_cause(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Transcript bytes read through t so far (index passes, records, digests). */
uint64_t transcript_bytes_read(const struct transcript *);

/*
 * The persistent index (transcript-cache.c): a cache of what a pass derived, kept in
 * cache_dir and checked against the transcript on every use (device, inode,
 * size, digests of the first and last indexed bytes, format version,
 * header checksum); it is used where it is mapped, and each block of it is
 * checked (checksum, bounds) when first used (transcript-cache-lazy.c);
 * bytes appended since are indexed on top.  Anything that does not match
 * means a full pass, never a wrong answer.
 */
enum tx_index_state {
	TX_INDEX_NONE,		/* no cache asked for */
	TX_INDEX_COLD,		/* no index cache: full pass */
	TX_INDEX_WARM,		/* an index cache, valid; appended bytes indexed */
	TX_INDEX_RESCAN		/* an index cache did not match: full pass */
};
#define TX_CACHE_MAX_BYTES	(1024ull << 20)	/* all index caches together */
#define TX_CACHE_MAX_FILES	512

/* Like transcript_open, from the index cache when it is valid (cache_dir NULL:
   transcript_open). */
struct transcript *transcript_open_cached(const char *path, const char *session_id,
    const char *cache_dir, char **cause);
/* Keep the index in cache_dir (write, rename; not synced), then prune the
   directory's indexes, oldest first, to max_bytes and max_files.  0 or -1 + cause. */
int transcript_save(struct transcript *, const char *cache_dir, uint64_t max_bytes,
    size_t max_files, char **cause);
/* The size an index cache of path says it covers, unchecked (0: none): how
   much a restore will have to read, for scheduling only. */
uint64_t transcript_cached_size(const char *cache_dir, const char *path);
/* Whether the index cache lags behind this one (a save would change it). */
int transcript_index_dirty(const struct transcript *);
enum tx_index_state transcript_index_state(const struct transcript *);
const char *transcript_index_state_name(enum tx_index_state);
/* Why an index cache was not used ("checksum", "digest", ...), or NULL. */
const char *transcript_index_reason(const struct transcript *);
/* An index cache is checked block by block as it is used: whether a block
   or entry in use was damaged.  Then what was derived from t may be wrong:
   throw it away and open with transcript_open_rescan. */
int transcript_index_damaged(const struct transcript *);
/* Check all of an index cache now: 0, or -1 when damaged (as above). */
int transcript_index_check_all(const struct transcript *);
/* Bytes of the index cache checked so far (its blocks are checked as used). */
uint64_t transcript_index_checked(const struct transcript *);
/* Bytes of the index cache file read so far (its blocks are read as used). */
uint64_t transcript_index_read(const struct transcript *);
/* Index the whole file, as when an index cache is found damaged (state
   rescan, reason why). */
struct transcript *transcript_open_rescan(const char *path, const char *session_id,
    const char *why, char **cause);

#endif
