# Analyst's R kernel: one R context of a sandbox, started and spoken to by the Python kernel
# (analyst_languages.py), in the same jail and under the same limits.
#
# Requests, one JSON object a line, on stdin: {"type": "execute", "id", "code", "envs"},
# {"type": "env", "envs"}, and the host's answers to sql() (query-columns, query-rows, query-end,
# query-error, table-description). Messages, one JSON object a line, on the fd named by the first
# argument: {"type": "ready"}, {"type": "result", "main", "bundle"}, {"type": "error", "name",
# "value", "traceback"}, {"type": "done"}, and sql()'s questions (query, query-cancel,
# describe-table). What code prints goes to fd 1 and 2, which the Python kernel reads as the
# cell's output. An interrupt is SIGINT: the running cell stops, its variables stay.

local({
  kernel <- new.env()
  kernel$messages <- file(sprintf("/dev/fd/%s", commandArgs(TRUE)[1]), open = "w", raw = TRUE)
  kernel$requests <- file("stdin", open = "r")
  kernel$questions <- 0L
  kernel$plots <- file.path(tempdir(), "analyst-plots")
  dir.create(kernel$plots, showWarnings = FALSE)

  send <- function(message) {
    line <- jsonlite::toJSON(message, auto_unbox = TRUE, null = "null", na = "null", digits = NA, force = TRUE)
    writeLines(line, kernel$messages, useBytes = TRUE)
    flush(kernel$messages)
  }

  next_request <- function() {
    line <- readLines(kernel$requests, n = 1, warn = FALSE)
    if (length(line) == 0) quit(save = "no", status = 0) # the Python kernel is gone
    jsonlite::fromJSON(line, simplifyVector = TRUE, simplifyMatrix = FALSE, simplifyDataFrame = FALSE)
  }

  # ------------------------------------------------------------------ results

  # A data.frame (or tibble, data.table) as {column: [values]}, as Python's analyst/data is.
  frame_data <- function(frame) {
    frame <- as.data.frame(utils::head(frame, 10000L))
    columns <- lapply(frame, function(column) {
      if (inherits(column, "POSIXt")) column <- format(column, "%Y-%m-%dT%H:%M:%S")
      else if (inherits(column, "Date") || is.factor(column)) column <- as.character(column)
      else if (!is.atomic(column)) column <- vapply(column, function(v) paste(format(v), collapse = ", "), "")
      I(column)
    })
    names(columns) <- make.unique(names(frame))
    columns
  }

  text_of <- function(value) paste(utils::capture.output(print(value)), collapse = "\n")

  # Every form of a value that Analyst shows: text, and for tables HTML and the data.
  bundle_of <- function(value) {
    bundle <- list(`text/plain` = text_of(value))
    if (is.data.frame(value) || is.matrix(value)) {
      html <- tryCatch(paste(repr::repr_html(value), collapse = "\n"), error = function(e) NULL)
      if (!is.null(html)) bundle[["text/html"]] <- html
    }
    if (is.data.frame(value)) {
      data <- tryCatch(frame_data(value), error = function(e) NULL)
      if (!is.null(data)) bundle[["analyst/data"]] <- data
    }
    bundle
  }

  # A value that draws when printed (ggplot2, lattice, grid) goes to the cell's PNG device.
  draws <- function(value) inherits(value, c("ggplot", "gg", "trellis", "grob", "gtable", "recordedplot"))

  publish <- function(cell, value, main) {
    if (draws(value)) {
      print(value)
      return(invisible())
    }
    bundle <- bundle_of(value)
    flush(stdout())
    send(list(type = "result", id = cell, main = main, bundle = bundle))
  }

  start_plots <- function() {
    unlink(list.files(kernel$plots, full.names = TRUE))
    grDevices::png(file.path(kernel$plots, "plot-%03d.png"), width = 7, height = 5, units = "in",
                   res = 96, type = "cairo")
    grDevices::dev.cur()
  }

  finish_plots <- function(cell, device) {
    if (device %in% grDevices::dev.list()) grDevices::dev.off(device)
    for (path in sort(list.files(kernel$plots, pattern = "^plot-.*[.]png$", full.names = TRUE))) {
      png <- readBin(path, "raw", file.info(path)$size)
      if (length(png) > 0) {
        send(list(type = "result", id = cell, main = FALSE,
                  bundle = list(`image/png` = gsub("\n", "", jsonlite::base64_enc(png), fixed = TRUE), `text/plain` = "<plot>")))
      }
    }
    unlink(list.files(kernel$plots, full.names = TRUE))
  }

  # ------------------------------------------------------------------ errors

  # The calls from the cell's code down to where the condition was raised, as R's traceback() has them.
  user_calls <- function(calls, base) {
    heads <- vapply(calls, function(call) if (is.call(call)) deparse(call[[1]], nlines = 1)[1] else "", "")
    start <- which(heads == "withVisible" & seq_along(heads) > base)[1] + 1L
    if (is.na(start)) return(list())
    while (start <= length(calls) && heads[start] == "eval") start <- start + 1L # withVisible(eval(…))'s own
    if (start > length(calls)) return(list())
    # Up to where the condition's machinery begins: R's handler for errors of C code, then ours.
    ends <- which(seq_along(heads) >= start & (heads == ".handleSimpleError" | startsWith(heads, "(function")))
    last <- if (length(ends)) ends[1] - 1L else length(calls)
    if (last < start) list() else calls[start:last]
  }

  error_message <- function(condition, calls) {
    call <- conditionCall(condition)
    head <- if (is.null(call)) sprintf("Error: %s", conditionMessage(condition)) else
      sprintf("Error in %s: %s", deparse(call, nlines = 1)[1], conditionMessage(condition))
    lines <- vapply(seq_along(calls), function(i) sprintf("%d. %s", i, deparse(calls[[i]], nlines = 1)[1]), "")
    paste(c(head, if (length(lines)) c("", "Traceback:", lines)), collapse = "\n")
  }

  # ------------------------------------------------------------------ cells

  kernel$count <- 0L

  run_cell <- function(request) {
    cell <- request$id
    envs <- request$envs
    saved <- list()
    for (name in names(envs)) {
      saved[[name]] <- Sys.getenv(name, unset = NA)
      do.call(Sys.setenv, stats::setNames(list(envs[[name]]), name))
    }
    on.exit(for (name in names(saved)) {
      if (is.na(saved[[name]])) Sys.unsetenv(name)
      else do.call(Sys.setenv, stats::setNames(list(saved[[name]]), name))
    })
    kernel$count <- kernel$count + 1L
    error <- NULL
    exprs <- tryCatch(parse(text = request$code, keep.source = FALSE), error = function(e) e)
    if (inherits(exprs, "error")) {
      error <- list(name = "SyntaxError", value = conditionMessage(exprs), traceback = conditionMessage(exprs))
      exprs <- expression()
    }
    device <- start_plots()
    base <- sys.nframe()
    for (i in seq_along(exprs)) {
      calls <- NULL
      outcome <- tryCatch(
        withCallingHandlers(
          withVisible(eval(exprs[[i]], globalenv())),
          error = function(e) calls <<- sys.calls(),
          warning = function(w) {
            call <- conditionCall(w)
            # A warning of the cell's own top-level call names none (the call is the kernel's eval).
            top <- is.null(call) || identical(call, quote(eval(exprs[[i]], globalenv())))
            where <- if (top) "" else sprintf(" in %s", deparse(call, nlines = 1)[1])
            cat(sprintf("Warning message%s:\n%s\n", where, conditionMessage(w)), file = stderr())
            invokeRestart("muffleWarning")
          }
        ),
        error = function(e) {
          list(error = list(name = class(e)[1], value = conditionMessage(e),
                            traceback = error_message(e, user_calls(calls, base))))
        },
        interrupt = function(i) {
          list(error = list(name = "KeyboardInterrupt", value = "the cell was interrupted", traceback = ""))
        }
      )
      if (!is.null(outcome$error)) {
        error <- outcome$error
        break
      }
      if (isTRUE(outcome$visible)) {
        shown <- tryCatch({ publish(cell, outcome$value, i == length(exprs)); NULL }, error = function(e) e)
        if (!is.null(shown)) {
          error <- list(name = class(shown)[1], value = conditionMessage(shown), traceback = error_message(shown, list()))
          break
        }
      }
    }
    tryCatch(finish_plots(cell, device), error = function(e) NULL)
    flush(stdout())
    flush(stderr())
    if (!is.null(error)) send(c(list(type = "error", id = cell), error))
    send(list(type = "done", id = cell, count = kernel$count))
  }

  # ------------------------------------------------------------------ sql(): questions to the host

  ask <- function(message) {
    kernel$questions <- kernel$questions + 1L
    message$id <- sprintf("r%d", kernel$questions)
    send(message)
    message$id
  }

  # The answers to one question, in order, until its last; other lines (a stopped query's) are dropped.
  answers <- function(id, last) {
    collected <- list()
    repeat {
      answer <- next_request()
      if (!identical(answer$id, id)) next
      collected[[length(collected) + 1L]] <- answer
      if (answer$type %in% last) return(collected)
    }
  }

  as_column <- function(values, type, rows) {
    if (is.list(values)) values <- vapply(values, function(v) if (is.null(v)) NA_character_ else
      if (is.character(v) && length(v) == 1) v else as.character(jsonlite::toJSON(v, auto_unbox = TRUE)), "")
    if (length(values) == 0) values <- rep(NA, rows)
    switch(type,
      int = { numbers <- suppressWarnings(as.numeric(values))
              if (all(is.na(numbers) | abs(numbers) < .Machine$integer.max)) as.integer(numbers) else numbers },
      float = , decimal = suppressWarnings(as.numeric(values)),
      bool = as.logical(values),
      date = as.Date(values),
      timestamp = , timestamptz = as.POSIXct(sub("Z$", "", sub("T", " ", values)), tz = "UTC"),
      as.character(values)
    )
  }

  sql <- function(query, source = NULL, params = NULL) {
    if (!is.character(query) || length(query) != 1) stop("sql() takes one SQL statement as a string")
    id <- ask(list(type = "query", query = query, source = source, params = params, format = "values"))
    withCallingHandlers(
      {
        got <- answers(id, c("query-end", "query-error"))
        last <- got[[length(got)]]
        if (last$type == "query-error") stop(structure(class = c("QueryError", "error", "condition"),
                                                      list(message = last$message, call = NULL)))
        columns <- got[[1]]$columns
        parts <- Filter(function(answer) answer$type == "query-rows", got)
        names <- vapply(columns, function(column) column$name, "")
        types <- vapply(columns, function(column) column$type, "")
        frame <- lapply(seq_along(names), function(c) {
          values <- unlist(lapply(parts, function(part) {
            v <- part$values[[c]]
            if (is.list(v)) lapply(v, function(x) if (is.null(x)) NA else x) else v
          }), recursive = FALSE)
          as_column(if (is.null(values)) character() else values, types[[c]], last$rows)
        })
        names(frame) <- make.unique(names)
        frame <- as.data.frame(frame, stringsAsFactors = FALSE, check.names = FALSE)
        if (!is.null(last$truncated)) message(last$truncated)
        frame
      },
      interrupt = function(i) send(list(type = "query-cancel", id = id))
    )
  }

  describe_table <- function(table, source = NULL) {
    id <- ask(list(type = "describe-table", table = table, source = source))
    answer <- answers(id, "table-description")[[1]]
    if (!is.null(answer$error)) stop(answer$error)
    cat(answer$text, "\n", sep = "")
    invisible(answer$text)
  }

  # sql() and describe_table() for code, in an environment of their own that code's rm() leaves alone.
  tools <- new.env()
  tools$sql <- sql
  tools$describe_table <- describe_table
  attach(tools, name = "analyst", warn.conflicts = FALSE)

  options(warn = 1, width = 100, repr.plot.res = 96)
  send(list(type = "ready", pid = Sys.getpid(), version = paste(R.version$major, R.version$minor, sep = ".")))
  repeat {
    request <- tryCatch(next_request(), interrupt = function(i) NULL)
    if (is.null(request)) next
    if (identical(request$type, "execute")) {
      tryCatch(run_cell(request), interrupt = function(i) NULL)
    } else if (identical(request$type, "env")) {
      for (name in names(request$envs)) do.call(Sys.setenv, stats::setNames(list(request$envs[[name]]), name))
    }
  }
})
