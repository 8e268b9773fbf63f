# Embed a text file (the page's HTML, CSS or JavaScript) into C as one string literal.
# Backslashes, quotes and '?' are escaped ('?' so that no '??x' in the text reads as a trigraph).
file(READ ${IN} text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "?" "\\?" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE ${OUT} "/* generated from ${IN} */\nconst char ${NAME}[] =\n\"${text}\";\n")
