-- Display token options (issue 15): how many next-up codes the screen
-- lists, whether it speaks each call, and its language (null: the
-- browser's). Existing tokens keep what their boards did: no next-up
-- codes, calls spoken, the browser's language.
ALTER TABLE display_tokens
    ADD COLUMN next_up  integer NOT NULL DEFAULT 0 CHECK (next_up BETWEEN 0 AND 5),
    ADD COLUMN speech   boolean NOT NULL DEFAULT true,
    ADD COLUMN language text;
