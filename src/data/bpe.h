/* SPDX-License-Identifier: MIT */
/* bpe.h - byte-level byte-pair encoding (Sennrich et al., 2016, "Neural
 * Machine Translation of Rare Words with Subword Units"; GPT-2's
 * byte-level variant, Radford et al., 2019): learning a tokenizer from
 * text, reading the ones people have (GPT-2's encoder.json + vocab.bpe,
 * the BPE model of a Hugging Face tokenizer.json), writing one, and
 * turning bytes into token ids and back.
 *
 * A token is a string of bytes; ids run 0 to size - 1 and every one of
 * the 256 bytes is a token of its own, so any input, UTF-8 or not, has an
 * encoding and decoding gives it back byte for byte. In the files, a
 * token's bytes are written as GPT-2 writes them: each byte one printable
 * code point (bytes_to_unicode in GPT-2's encoder.py). */
#ifndef DT_DATA_BPE_H
#define DT_DATA_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* A tokenizer. Encoding uses scratch memory inside it, so one dt_bpe is
 * for one thread at a time. */
struct dt_bpe;

/* Reads a tokenizer. A JSON object with a "model" key is a Hugging Face
 * tokenizer.json (model.type "BPE" or absent; model.vocab and
 * model.merges, each merge "A B" or ["A", "B"]; everything else, added
 * tokens and normalizers included, is ignored). Any other JSON object is
 * GPT-2's encoder.json, and its merges are read from the file vocab.bpe
 * in the same directory. Refused, with DT_ERR_FORMAT naming the file and
 * the place (line:col, 1-based, bytes, for a JSON syntax error and in
 * vocab.bpe; the JSON key otherwise): invalid JSON or UTF-8, a token with
 * a character outside the byte-level alphabet or no characters, an id
 * that is not a whole number in [0, 2^31), two tokens with one id, an id
 * no token has (ids must run 0 to N-1), a byte without a token, a merge
 * that is not two tokens separated by one space, that names a token the
 * vocabulary lacks or whose result it lacks, the same merge twice.
 * DT_ERR_IO when a file cannot be read. On success *out is the caller's
 * (dt_bpe_free); on error *out is NULL. */
enum dt_status dt_bpe_load(const char *path, struct dt_bpe **out,
			   struct dt_error *err);

/* Frees b; accepts NULL. */
void dt_bpe_free(struct dt_bpe *b);

/* The number of token ids (every id is below it). */
int64_t dt_bpe_size(const struct dt_bpe *b);

/* The number of merges. */
int64_t dt_bpe_merges(const struct dt_bpe *b);

/* The lowercase hex sha256 of the file (for encoder.json: of its bytes
 * followed by vocab.bpe's) the tokenizer was read from, or of the file
 * dt_bpe_save wrote; "" for a tokenizer only learned. Owned by b. */
const char *dt_bpe_digest(const struct dt_bpe *b);

/* The id of the one-byte token of byte c. */
int64_t dt_bpe_byte_id(const struct dt_bpe *b, uint8_t c);

/* The bytes of token id (in [0, size)): sets *bytes (owned by b, not
 * terminated) and returns their count (>= 1). */
size_t dt_bpe_piece(const struct dt_bpe *b, int64_t id,
		    const unsigned char **bytes);

/* Encodes text[0..n) into ids (n, the caller's: a token is at least one
 * byte, so n ids always suffice) and sets *n_ids. The text is cut into
 * words by GPT-2's pattern ('s 't 're 've 'm 'll 'd, an optional space
 * and letters, or numbers, or other symbols, then white space) through
 * PCRE2 with Unicode properties; each run of bytes that is not valid
 * UTF-8 is a word of its own. Each word is merged as GPT-2's bpe() does:
 * while a neighbouring pair has a merge, every occurrence of the pair of
 * lowest rank, left to right, becomes one token. The result depends on
 * nothing but b and the text. Returns DT_ERR_DATA only if PCRE2 fails to
 * match ("byte N: ..."); *n_ids is then the tokens written so far. */
enum dt_status dt_bpe_encode(struct dt_bpe *b, const unsigned char *text,
			     size_t n, int32_t *ids, int64_t *n_ids,
			     struct dt_error *err);

/* Learning: counts the words of the texts fed to it, then merges. */
struct dt_bpe_trainer;

/* A trainer with no words yet; dt_bpe_trainer_free frees it. */
struct dt_bpe_trainer *dt_bpe_trainer_new(void);
/* Frees t; accepts NULL. */
void dt_bpe_trainer_free(struct dt_bpe_trainer *t);

/* Adds the words of text[0..n) (cut as dt_bpe_encode cuts them) to t's
 * counts. DT_ERR_DATA as dt_bpe_encode. */
enum dt_status dt_bpe_trainer_feed(struct dt_bpe_trainer *t,
				   const unsigned char *text, size_t n,
				   struct dt_error *err);

/* Learns a tokenizer of vocab_size ids (>= 256) from the words fed: ids
 * 0 to 255 are the bytes in GPT-2's order (the printable ones first), then
 * one id per merge. Each merge joins the neighbouring pair that occurs
 * most often in the words (counted with the words' multiplicities; a tie
 * goes to the smaller first id, then the smaller second id), so the
 * result is a pure function of the words and vocab_size. When no pair is
 * left (every word is one token) it stops early: dt_bpe_size then says
 * how many ids there are. DT_ERR_USAGE for vocab_size below 256 or above
 * 2^31 - 1. On success *out is the caller's; t may be fed and finished
 * again. */
enum dt_status dt_bpe_trainer_finish(struct dt_bpe_trainer *t,
				     int64_t vocab_size, struct dt_bpe **out,
				     struct dt_error *err);

/* Writes b to path as a Hugging Face tokenizer.json (a ByteLevel
 * pre-tokenizer and decoder, a BPE model with its vocab in id order and
 * its merges in rank order as "A B" strings), atomically (nothing at
 * path unless the whole file is written), and sets b's digest to the
 * file's. DT_ERR_IO on failure, naming the file. */
enum dt_status dt_bpe_save(struct dt_bpe *b, const char *path,
			   struct dt_error *err);

/* ---- files (bpe_files.c) ------------------------------------------------ *
 * Texts and token files may be plain or gzip (zlib reads both). */

/* dt_bpe_trainer_feed with the bytes of the file at path. DT_ERR_IO when
 * it cannot be read; errors name the file. */
enum dt_status dt_bpe_trainer_feed_file(struct dt_bpe_trainer *t,
					const char *path,
					struct dt_error *err);

/* Encodes the file at path: *ids (*n_ids of them, malloc'd, the
 * caller's) on success, NULL on error. Errors as dt_bpe_encode, naming
 * the file; DT_ERR_IO when it cannot be read. */
enum dt_status dt_bpe_encode_file(struct dt_bpe *b, const char *path,
				  int32_t **ids, int64_t *n_ids,
				  struct dt_error *err);

/* The width of b's token files: 2 (uint16) when every id fits, else 4. */
int dt_bpe_token_width(const struct dt_bpe *b);

/* Writes ids (n) to path as a token file of dt_bpe_token_width(b) bytes
 * per id, little-endian, no header (data.format: tokens reads it),
 * atomically. DT_ERR_IO naming the file on failure. */
enum dt_status dt_bpe_write_tokens(const struct dt_bpe *b,
				   const int32_t *ids, int64_t n,
				   const char *path, struct dt_error *err);

struct dt_token_data;
/* dt_text_encode for a BPE (data.h): encodes the text at path once and
 * keeps the ids in the download cache (DTRAIN_CACHE, else as dt_fetch
 * finds it) as bpe-T-X.tok, T and X the first 16 hex digits of the
 * tokenizer's digest and of the text's sha256, written atomically; the
 * next call with the same tokenizer and text maps that file instead of
 * encoding. A cache that cannot be made or written is passed over (the
 * ids are then kept in memory). The windows are cut as dt_tokens_load
 * cuts them; td->vocab_size is the tokenizer's size. Errors: as
 * dt_bpe_encode_file and dt_tokens_load (a damaged cache file is
 * refused naming it, with its token width and ids checked). */
enum dt_status dt_bpe_text_encode(struct dt_bpe *b, const char *path,
				  int64_t context, int64_t stride,
				  struct dt_token_data *td,
				  struct dt_error *err);

/* Decodes the token file at tokens (dt_bpe_token_width(b) bytes per id)
 * into the bytes they stand for, written atomically to out. Errors:
 * DT_ERR_FORMAT "PATH: byte N: the file ends inside a token",
 * DT_ERR_DATA "PATH: byte N: token T is not below the tokenizer's
 * size S", DT_ERR_IO. */
enum dt_status dt_bpe_decode_file(const struct dt_bpe *b, const char *tokens,
				  const char *out, struct dt_error *err);

#endif
