-- Privacy (issue 27): the periodic job notify.clear_phones forgets the
-- phone of appointments finished (completed, cancelled, no-show) more than
-- notify.keep_phones ago, now that an appointment's phone is messaged (the
-- reminder); this finds them.
CREATE INDEX appointments_phone_finished_idx ON appointments ((COALESCE(completed_at, cancelled_at, no_show_at)))
    WHERE phone IS NOT NULL;
