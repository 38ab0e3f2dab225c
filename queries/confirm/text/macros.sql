-- macros: the text connection's helpers for the text formats of kvir confirm (created once per run there).
-- Params: none
--   confirm_pyrepr(s)     the str a Python repr (vLLM's %r) stands for: '...' or "..." with \\ \' \" \n \r \t
--                         \xNN \uNNNN \UNNNNNNNN; NULL for None or anything that is not a str literal
--   confirm_content(j)    a chat message's content: a string, or the text parts of a list
--   confirm_prompts(j)    the prompts a request's prompt / messages / input value holds: a string (one), a list
--                         of strings (several prompts), chat messages (one prompt: their contents, one per
--                         line); token ids hold no text
-- a code point UTF-8 cannot hold (a lone surrogate, beyond U+10FFFF) becomes U+FFFD, as kvir's line reader
-- does with bytes that are no UTF-8
CREATE OR REPLACE TEMP MACRO confirm_code_point(n) AS CASE
    WHEN n BETWEEN 55296 AND 57343 OR n > 1114111 THEN chr(65533) ELSE chr(n) END;
CREATE OR REPLACE TEMP MACRO confirm_escape_char(e) AS CASE
    WHEN e IS NULL THEN '' WHEN e = 'n' THEN chr(10) WHEN e = 't' THEN chr(9) WHEN e = 'r' THEN chr(13)
    WHEN e IN ('''', '"') THEN e ELSE confirm_code_point(('0x' || substr(e, 2))::INTEGER) END;
-- a piece of a repr between two escaped backslashes: the text between escapes, each followed by its character
CREATE OR REPLACE TEMP MACRO confirm_unescape(piece) AS array_to_string(list_transform(
    list_zip(regexp_split_to_array(piece, '\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[ntr''"])'),
             regexp_extract_all(piece, '\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[ntr''"])', 1)),
    lambda z: coalesce(z[1], '') || confirm_escape_char(z[2])), '');
-- Python parses escapes left to right, so the pieces between escaped backslashes (\\) unescape alone
CREATE OR REPLACE TEMP MACRO confirm_pyrepr(s) AS CASE
    WHEN s IS NULL OR length(s) < 2 OR left(s, 1) NOT IN ('''', '"') OR right(s, 1) <> left(s, 1) THEN NULL
    ELSE array_to_string(list_transform(string_split(substr(s, 2, length(s) - 2), '\\'),
                                        lambda p: confirm_unescape(p)), '\')
END;
CREATE OR REPLACE TEMP MACRO confirm_content(j) AS CASE
    WHEN j IS NULL THEN NULL
    WHEN json_type(j) = 'VARCHAR' THEN json_extract_string(j, '$')
    WHEN json_type(j) = 'ARRAY' THEN nullif(array_to_string(list_filter(list_transform(json_extract(j, '$[*]'),
        lambda p: CASE WHEN json_type(p) = 'VARCHAR' THEN json_extract_string(p, '$') ELSE json_extract_string(p, '$.text') END), lambda x: x IS NOT NULL), ''), '')
END;
CREATE OR REPLACE TEMP MACRO confirm_prompts(j) AS CASE
    WHEN j IS NULL THEN []
    WHEN json_type(j) = 'VARCHAR' THEN [json_extract_string(j, '$')]
    WHEN json_type(j) <> 'ARRAY' THEN []
    WHEN json_array_length(j) = 0 THEN []
    WHEN json_type(j, '$[0]') = 'VARCHAR' THEN list_transform(json_extract(j, '$[*]'), lambda x: json_extract_string(x, '$'))
    WHEN json_type(j, '$[0]') = 'OBJECT' THEN [array_to_string(list_filter(list_transform(json_extract(j, '$[*]'),
        lambda m: confirm_content(json_extract(m, '$.content'))), lambda x: x IS NOT NULL), chr(10))]
    ELSE []
END;
-- a JSON value a log stores as a JSON string (LiteLLM's columns): the value that string holds
CREATE OR REPLACE TEMP MACRO confirm_unwrap(wrapped) AS CASE
    WHEN wrapped IS NULL THEN NULL
    WHEN json_type(wrapped) = 'VARCHAR' AND json_valid(json_extract_string(wrapped, '$')) THEN (json_extract_string(wrapped, '$'))::JSON ELSE wrapped END;
-- the prompts of a request body: its messages, prompt or input
CREATE OR REPLACE TEMP MACRO confirm_body_prompts(req_body) AS CASE
    WHEN req_body IS NULL OR json_type(req_body) <> 'OBJECT' THEN []
    WHEN json_type(req_body, '$.messages') = 'ARRAY' THEN confirm_prompts(json_extract(req_body, '$.messages'))
    WHEN (json_extract(req_body, '$.prompt')) IS NOT NULL THEN confirm_prompts(json_extract(req_body, '$.prompt'))
    ELSE confirm_prompts(json_extract(req_body, '$.input')) END;
-- the response text of a response body: its first choice's message or text
CREATE OR REPLACE TEMP MACRO confirm_body_response(resp_body) AS CASE
    WHEN resp_body IS NULL THEN NULL
    WHEN json_type(resp_body) = 'VARCHAR' THEN json_extract_string(resp_body, '$')
    WHEN json_type(resp_body) <> 'OBJECT' THEN NULL
    WHEN json_type(resp_body, '$.choices') = 'ARRAY' THEN coalesce(confirm_content(json_extract(resp_body, '$.choices[0].message.content')),
                                                          json_extract_string(resp_body, '$.choices[0].text'))
    ELSE confirm_content(json_extract(resp_body, '$.content')) END;
