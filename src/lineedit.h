/* lineedit.h - a small line editor for the terminal (qlm chat's prompt).
 *
 * Raw mode through termios while a line is read, restored before
 * returning: left/right, Home/End, Backspace/Delete, up/down through
 * history, Ctrl-A/E/B/F/K/U/W/L/P/N, and bracketed paste, so that pasted
 * text (newlines included) lands in the line instead of submitting it.
 * The line is shown on one terminal row, scrolled sideways when longer;
 * a newline in it is shown as "↵".  No dependencies beyond POSIX. */
#ifndef QLM_LINEEDIT_H
#define QLM_LINEEDIT_H

#include <stdbool.h>

typedef struct qlm_le qlm_le;

typedef enum qlm_le_status {
    QLM_LE_LINE,       /* Enter: *line is the text */
    QLM_LE_EOF,        /* Ctrl-D on an empty line, or end of input */
    QLM_LE_INTERRUPT,  /* Ctrl-C: *line is what had been typed (discarded) */
    QLM_LE_ERROR,      /* I/O error or out of memory */
} qlm_le_status;

/* An editor reading fd_in and drawing on fd_out (both a terminal), keeping
 * at most history_max lines (0: no history at all). */
qlm_le *qlm_le_new(int fd_in, int fd_out, int history_max);
void qlm_le_free(qlm_le *le);

/* Reads one line after showing prompt.  *line is malloc'd (caller frees)
 * for LINE and INTERRUPT, NULL otherwise. */
qlm_le_status qlm_le_read(qlm_le *le, const char *prompt, char **line);

/* Adds a line to the history (empty lines and repeats of the last one are
 * not kept); with a history file open it is appended there too. */
void qlm_le_history_add(qlm_le *le, const char *line);
/* Loads the history kept in path (if it exists) and appends new lines to
 * it from now on.  Returns false (errno set) if it cannot be opened. */
bool qlm_le_history_file(qlm_le *le, const char *path);

#endif
